//! Syntactic questions about types. The macro sees tokens, not resolved types, so these look
//! at paths' last segments (`Result`, `WorkflowContext`): an alias under another name is not
//! recognised, and rustc checks the real types in the generated code anyway.

use proc_macro2::{Group, TokenStream, TokenTree};
use quote::ToTokens;
use syn::{GenericArgument, PathArguments, Type, TypePath};

/// A type as its author wrote it, for metadata: `Vec<String>`, not `Vec < String >`.
pub(crate) fn written(ty: &Type) -> String {
    let tokens = ty.to_token_stream().to_string();
    let chars: Vec<char> = tokens.chars().collect();
    let word = |c: Option<&char>| c.is_some_and(|c| c.is_alphanumeric() || *c == '_');
    let mut out = String::new();
    for (i, &c) in chars.iter().enumerate() {
        match c {
            // A space stays only between two words (`dyn Trait`, `'static str`).
            ' ' if word(out.chars().last().as_ref()) && word(chars.get(i + 1)) => out.push(' '),
            ' ' => {}
            ',' | ';' => {
                out.push(c);
                let next = chars[i + 1..].iter().find(|c| **c != ' ');
                if !matches!(next, Some(')' | '>' | ']') | None) {
                    out.push(' ');
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// How a context parameter is borrowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Borrow {
    Ref,
    Mut,
    Owned,
}

/// Strips parentheses and invisible groups: `(T)` is `T`.
fn peel(ty: &Type) -> &Type {
    match ty {
        Type::Paren(p) => peel(&p.elem),
        Type::Group(g) => peel(&g.elem),
        _ => ty,
    }
}

fn path_of(ty: &Type) -> Option<&TypePath> {
    match peel(ty) {
        Type::Path(p) if p.qself.is_none() => Some(p),
        _ => None,
    }
}

/// Whether the last segment of `ty`'s path is `name`.
pub(crate) fn is_named(ty: &Type, name: &str) -> bool {
    path_of(ty)
        .and_then(|p| p.path.segments.last())
        .is_some_and(|s| s.ident == name)
}

/// `ty` as `WorkflowContext<..>`/`ActivityContext` (named `name`), with how it is borrowed.
pub(crate) fn context_borrow(ty: &Type, name: &str) -> Option<Borrow> {
    match peel(ty) {
        Type::Reference(r) if is_named(&r.elem, name) => Some(if r.mutability.is_some() {
            Borrow::Mut
        } else {
            Borrow::Ref
        }),
        other if is_named(other, name) => Some(Borrow::Owned),
        _ => None,
    }
}

/// `T` of `Result<T, ..>` (or of an alias spelled `..::Result<T>`).
pub(crate) fn result_ok(ty: &Type) -> Option<&Type> {
    let segment = path_of(ty)?.path.segments.last()?;
    if segment.ident != "Result" {
        return None;
    }
    match &segment.arguments {
        PathArguments::AngleBracketed(args) => args.args.iter().find_map(|arg| match arg {
            GenericArgument::Type(t) => Some(t),
            _ => None,
        }),
        _ => None,
    }
}

/// `()`.
pub(crate) fn is_unit(ty: &Type) -> bool {
    matches!(peel(ty), Type::Tuple(t) if t.elems.is_empty())
}

/// `&T`: the `T`.
pub(crate) fn referent(ty: &Type) -> Option<&Type> {
    match peel(ty) {
        Type::Reference(r) => Some(&r.elem),
        _ => None,
    }
}

/// Whether `ty` is `Self` or the bare name of the workflow type.
pub(crate) fn is_self(ty: &Type, self_name: &syn::Ident) -> bool {
    match path_of(ty) {
        Some(p) => {
            p.path.segments.len() == 1
                && p.path.segments[0].arguments.is_none()
                && (p.path.segments[0].ident == "Self" || p.path.segments[0].ident == *self_name)
        }
        None => false,
    }
}

/// `ty` with every `Self` replaced by `with`, for generated items outside the impl block (the
/// client trait), where `Self` would mean something else. Spans are kept.
pub(crate) fn replace_self(ty: &Type, with: &Type) -> TokenStream {
    fn walk(tokens: TokenStream, with: &Type) -> TokenStream {
        tokens
            .into_iter()
            .map(|tt| match tt {
                TokenTree::Ident(ident) if ident == "Self" => {
                    let mut replaced = with.to_token_stream();
                    respan(&mut replaced, ident.span());
                    TokenTree::Group(Group::new(proc_macro2::Delimiter::None, replaced))
                }
                TokenTree::Group(group) => {
                    let mut out = Group::new(group.delimiter(), walk(group.stream(), with));
                    out.set_span(group.span());
                    TokenTree::Group(out)
                }
                other => other,
            })
            .collect()
    }
    walk(ty.to_token_stream(), with)
}

fn respan(tokens: &mut TokenStream, span: proc_macro2::Span) {
    *tokens = std::mem::take(tokens)
        .into_iter()
        .map(|mut tt| {
            if let TokenTree::Group(g) = &tt {
                let mut inner = g.stream();
                respan(&mut inner, span);
                let mut group = Group::new(g.delimiter(), inner);
                group.set_span(span);
                tt = TokenTree::Group(group);
            } else {
                tt.set_span(span);
            }
            tt
        })
        .collect();
}

#[cfg(test)]
mod written_tests {
    use super::written;

    #[test]
    fn types_read_as_written() {
        let cases = [
            ("String", "String"),
            ("Vec<String>", "Vec<String>"),
            ("HashMap<String, Vec<u8>>", "HashMap<String, Vec<u8>>"),
            ("(u32, String)", "(u32, String)"),
            (
                "std::collections::BTreeMap<u8, (u8,)>",
                "std::collections::BTreeMap<u8, (u8,)>",
            ),
            ("[u8; 4]", "[u8; 4]"),
            ("Option<&'static str>", "Option<&'static str>"),
        ];
        for (src, expected) in cases {
            let ty: syn::Type = syn::parse_str(src).unwrap();
            assert_eq!(written(&ty), expected, "{src}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    fn same_tokens(a: &Type, b: &Type) -> bool {
        a.to_token_stream().to_string() == b.to_token_stream().to_string()
    }

    #[test]
    fn result_ok_finds_the_value_type() {
        let ty: Type = parse_quote!(Result<Vec<u8>, UpdateError>);
        assert!(same_tokens(result_ok(&ty).unwrap(), &parse_quote!(Vec<u8>)));
        let ty: Type = parse_quote!(std::result::Result<(), Rejection>);
        assert!(is_unit(result_ok(&ty).unwrap()));
        assert!(result_ok(&parse_quote!(Option<u8>)).is_none());
        assert!(result_ok(&parse_quote!(Result)).is_none());
    }

    #[test]
    fn contexts_and_their_borrows() {
        assert_eq!(
            context_borrow(&parse_quote!(&mut WorkflowContext<Self>), "WorkflowContext"),
            Some(Borrow::Mut)
        );
        assert_eq!(
            context_borrow(
                &parse_quote!(&wf_sdk::workflow::WorkflowContext<Self>),
                "WorkflowContext"
            ),
            Some(Borrow::Ref)
        );
        assert_eq!(
            context_borrow(&parse_quote!(ActivityContext), "ActivityContext"),
            Some(Borrow::Owned)
        );
        assert_eq!(
            context_borrow(&parse_quote!(&String), "WorkflowContext"),
            None
        );
    }

    #[test]
    fn self_is_recognised() {
        let name: syn::Ident = parse_quote!(AgentRun);
        assert!(is_self(&parse_quote!(Self), &name));
        assert!(is_self(&parse_quote!(AgentRun), &name));
        assert!(!is_self(&parse_quote!(Box<Self>), &name));
    }

    #[test]
    fn self_is_replaced_inside_generics() {
        let ty: Type = parse_quote!(Vec<Option<Self>>);
        let with: Type = parse_quote!(AgentRun);
        let out = replace_self(&ty, &with).to_string();
        assert!(!out.contains("Self"), "{out}");
        assert!(out.contains("AgentRun"), "{out}");
    }
}
