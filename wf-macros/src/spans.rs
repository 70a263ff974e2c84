//! Where rustc points when generated code fails to type-check.
//!
//! What the macro cannot check (types, serde impls) rustc checks in the generated code, and
//! its error lands on the span of the failing expression or type argument. These helpers put
//! those spans on the user's tokens, keeping call-site hygiene, so an error underlines the
//! user's return type or parameter type rather than `#[workflow]`.
//!
//! On stable Rust a span cannot be joined: a type's `span()` is only its first token. rustc
//! however spans an expression from its first token to its last, so an expression whose
//! tokens sit between a type's first and last tokens underlines the whole type.

use crate::ast::Method;
use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use quote::{quote, ToTokens};

/// A call-site span (names resolve as the macro's) located at `at` (errors show there).
pub(crate) fn at(at: Span) -> Span {
    Span::call_site().located_at(at)
}

/// The spans of the first and last tokens of `node`.
fn ends(node: &impl ToTokens) -> (Span, Span) {
    let mut tokens = node.to_token_stream().into_iter();
    let first = tokens.next().map_or_else(Span::call_site, |t| t.span());
    let last = tokens.last().map_or(first, |t| t.span());
    (first, last)
}

/// `tokens` located on `node`: the first token on `node`'s first token, every other
/// top-level token (and group delimiter) on its last, so that the expression and each of its
/// top-level sub-expressions underline `node`. (rustc joins spans by their outermost ends, so
/// a single token left at the call site would stretch the error back to `#[workflow]`.)
/// Tokens inside groups, such as call arguments, keep their own spans.
///
/// The top-level tokens all take call-site hygiene, which rustc needs to join their spans. A
/// generated local (mixed-site, `hygiene::local`) would no longer name its binding there, so
/// one goes inside a group: `&(__arg0)`, not `&__arg0`.
pub(crate) fn over(tokens: TokenStream, node: &impl ToTokens) -> TokenStream {
    let (first, last) = ends(node);
    tokens
        .into_iter()
        .enumerate()
        .map(|(i, mut tt)| {
            set_span(&mut tt, at(if i == 0 { first } else { last }));
            tt
        })
        .collect()
}

fn set_span(tt: &mut TokenTree, span: Span) {
    match tt {
        // A group's span is its delimiters'; its contents keep theirs.
        TokenTree::Group(g) => {
            let mut group = Group::new(g.delimiter(), g.stream());
            group.set_span(span);
            *tt = TokenTree::Group(group);
        }
        other => other.set_span(span),
    }
}

/// The wire tuple `(A, B, ..)` of a method's argument types (`types`, possibly rewritten).
/// A serde bound that fails on it is reported on the tuple, so its parentheses are located on
/// the one argument's type, or, for several arguments, on the parameter list.
pub(crate) fn wire_tuple(m: &Method, types: Vec<TokenStream>) -> TokenStream {
    let span = match m.args.as_slice() {
        [only] => ends(only.ty).0,
        _ => m.params_span(),
    };
    let mut group = Group::new(Delimiter::Parenthesis, quote!(#(#types,)*));
    group.set_span(at(span));
    TokenTree::Group(group).into()
}
