//! What the macros emit after reporting an error (thiserror's `fallback.rs`): the user's impl
//! block with the role attributes consumed, plus stand-ins for the generated items, so that
//! code elsewhere naming `AgentRunClient` or `AgentRun: WorkflowDefinition` still resolves.
//! The user sees the one error the macro reported, not a cascade of follow-on ones.
//!
//! With a rejected `crate = ".."` path there is no telling where wf is, so only the user's impl
//! block is emitted: stand-ins naming a guessed path would each fail.

use crate::ast::{self, Activities, Workflow};
use crate::attr::CratePath;
use crate::client::{self, Bodies};
use crate::ty;
use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::{parse_quote, ItemImpl, Type};

pub(crate) fn workflow(wf: &Workflow) -> TokenStream {
    let item = user_impl(wf.item, &wf.krate);
    let p = match wf.krate.private() {
        Some(p) if plain(wf.item) && wf.ident.is_some() => p,
        _ => return item.into_token_stream(),
    };
    let self_ty = wf.self_ty;
    let name = &wf.name;
    let client::Client {
        declaration,
        implementation,
    } = crate::child_handle::client_and_child(wf, &p, Bodies::Unreachable);
    // The run's types when they are usable as associated types; `()` stands in otherwise.
    let run = wf.run();
    let input = run
        .and_then(|r| r.args.first())
        .map(|a| a.ty)
        .filter(|t| usable(t));
    let output = run
        .and_then(|r| r.output)
        .and_then(ty::result_ok)
        .filter(|t| usable(t));
    let input = match input {
        // A dynamic type's run takes the type name and raw input, which make its input.
        _ if wf.dynamic => quote!(#p::DynamicInput),
        Some(input) => input.to_token_stream(),
        None => quote!(()),
    };
    let output = output.map_or_else(|| quote!(()), ToTokens::to_token_stream);
    quote! {
        #item
        #declaration
        const _: () = {
            #implementation
            impl #p::WorkflowDefinition for #self_ty {
                const NAME: &'static str = #name;
                type Input = #input;
                type Output = #output;
                fn init_state(_: &Self::Input) -> Self {
                    ::core::unreachable!("`#[workflow]` reported an error")
                }
                fn start_run(
                    _: #p::WorkflowContext<Self>,
                    _: Self::Input,
                ) -> #p::LocalBoxFuture<#p::Result<Self::Output, #p::WorkflowError>> {
                    ::core::unreachable!("`#[workflow]` reported an error")
                }
                fn handlers() -> #p::Vec<#p::Handler<Self>> {
                    ::core::unreachable!("`#[workflow]` reported an error")
                }
            }
        };
    }
}

pub(crate) fn activities(group: &Activities) -> TokenStream {
    let item = user_impl(group.item, &group.krate);
    let p = match group.krate.private() {
        Some(p) if plain(group.item) && group.ident.is_some() => p,
        _ => return item.into_token_stream(),
    };
    let self_ty = group.self_ty;
    quote! {
        #item
        const _: () = {
            impl #p::ActivityGroup for #self_ty {
                fn activity_name(_: #p::TypeId) -> #p::Option<&'static str> {
                    ::core::unreachable!("`#[activities]` reported an error")
                }
                fn register(self: #p::Arc<Self>, _: &mut #p::ActivityRegistry) {
                    ::core::unreachable!("`#[activities]` reported an error")
                }
            }
        };
    }
}

/// The user's methods, kept callable. A trait impl becomes inherent (its methods are not the
/// trait's, which is what the error says), and nothing is reported as dead code: the methods
/// are unused only because the generated code that calls them was withheld.
fn user_impl(item: &ItemImpl, krate: &CratePath) -> ItemImpl {
    let mut item = ast::without_role_attrs(item, krate);
    item.trait_ = None;
    item.attrs.push(parse_quote!(#[allow(dead_code)]));
    item
}

/// Whether generated impls can name the type: no generics to account for.
fn plain(item: &ItemImpl) -> bool {
    item.trait_.is_none() && item.generics.params.is_empty() && item.generics.where_clause.is_none()
}

/// Whether `ty` can be an associated type as written (no elided lifetimes, no `impl Trait`).
fn usable(ty: &Type) -> bool {
    !matches!(ty, Type::Reference(_) | Type::ImplTrait(_) | Type::Infer(_))
}
