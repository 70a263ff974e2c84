//! The pipelines (parse, view, check, then generate or fall back) and the code generation for
//! a checked workflow or activity group. Nothing here can fail: by the time code is generated
//! every rule in `check.rs` holds, and what is left for rustc (types, serde impls) is spanned
//! on the user's tokens.

use crate::ast::{self, Activities, Method, Workflow};
use crate::attr::{self, Role, Unfinished};
use crate::ctxt::Ctxt;
use crate::{client, fallback, ty};
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{ItemImpl, Type};

/// `#[workflow(..)] impl T { .. }`.
pub(crate) fn workflow(args: TokenStream, input: TokenStream) -> TokenStream {
    let item: ItemImpl = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(_) => return not_an_impl("workflow", "impl AgentRun { .. }", input),
    };
    let cx = Ctxt::new();
    let args = attr::workflow_args(&cx, args);
    let wf = Workflow::from_syn(&cx, &item, args);
    crate::check::workflow(&cx, &wf);
    match cx.check() {
        Ok(()) => workflow_impl(&wf),
        Err(errors) => {
            let fallback = fallback::workflow(&wf);
            quote!(#errors #fallback)
        }
    }
}

/// `#[activities] impl T { .. }`.
pub(crate) fn activities(args: TokenStream, input: TokenStream) -> TokenStream {
    let item: ItemImpl = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(_) => return not_an_impl("activities", "impl Tools { .. }", input),
    };
    let cx = Ctxt::new();
    attr::activities_args(&cx, args);
    let group = Activities::from_syn(&cx, &item);
    crate::check::activities(&cx, &group);
    match cx.check() {
        Ok(()) => activities_impl(&group),
        Err(errors) => {
            let fallback = fallback::activities(&group);
            quote!(#errors #fallback)
        }
    }
}

fn not_an_impl(attr: &str, example: &str, input: TokenStream) -> TokenStream {
    let msg = format!("`#[{attr}]` goes on an impl block: `#[{attr}] {example}`");
    let err = syn::Error::new(Span::call_site(), msg).to_compile_error();
    quote!(#err #input)
}

fn workflow_impl(wf: &Workflow) -> TokenStream {
    let item = ast::without_role_attrs(wf.item);
    let client = client::client(wf, client::Bodies::Real);
    let definition = definition(wf);
    quote! {
        #item
        #client
        const _: () = {
            #definition
        };
    }
}

/// `impl WorkflowDefinition for T`.
fn definition(wf: &Workflow) -> TokenStream {
    let self_ty = wf.self_ty;
    let name = &wf.name;
    let run = wf.run().expect("checked: one #[run]");
    let run_ident = run.ident();
    let input = run.args.first();
    let input_ty = input.map_or_else(|| quote!(()), |a| a.ty.to_token_stream());
    let output = run
        .output
        .and_then(ty::result_ok)
        .expect("checked: run returns Result<T, _>");

    // A mismatch between the user's error type and `WorkflowError` points at their return type.
    let run_fn = respan(quote!(Self::#run_ident), run.output_span());
    let (input_param, run_call) = match input {
        Some(_) => (quote!(__input), quote!(#run_fn(&mut __ctx, __input))),
        None => (quote!(_), quote!(#run_fn(&mut __ctx))),
    };

    let init_state = match wf.init() {
        Some(init) => {
            let ident = init.ident();
            match init.args.first() {
                // `__input` is spanned on the user's parameter type, so a wrong type points there.
                Some(arg) => {
                    let input = quote_spanned!(arg.ty.span()=> __input);
                    quote!(fn init_state(__input: &Self::Input) -> Self { Self::#ident(#input) })
                }
                None => quote!(fn init_state(_: &Self::Input) -> Self { Self::#ident() }),
            }
        }
        None => {
            let default =
                quote_spanned!(self_ty.span()=> <Self as ::wf_sdk::__private::Default>::default());
            quote!(fn init_state(_: &Self::Input) -> Self { #default })
        }
    };

    let mut wire_types: Vec<&Type> = Vec::new();
    for m in wf.handlers() {
        wire_types.extend(m.args.iter().map(|a| a.ty));
        match m.role {
            Role::Query { .. } => wire_types.extend(m.output),
            Role::Update { .. } => wire_types.extend(m.output.and_then(ty::result_ok)),
            _ => {}
        }
    }
    let asserts = wire_types.iter().map(|ty| assert_wire(ty));
    let handlers = wf.handlers().map(|m| handler(wf, m));

    quote! {
        impl ::wf_sdk::__private::WorkflowDefinition for #self_ty {
            const NAME: &'static str = #name;
            type Input = #input_ty;
            type Output = #output;

            #init_state

            fn start_run(
                __ctx: ::wf_sdk::__private::WorkflowContext<Self>,
                #input_param: Self::Input,
            ) -> ::wf_sdk::__private::LocalBoxFuture<
                ::wf_sdk::__private::Result<Self::Output, ::wf_sdk::__private::WorkflowError>,
            > {
                ::wf_sdk::__private::Box::pin(async move {
                    let mut __ctx = __ctx;
                    #run_call.await
                })
            }

            fn handlers() -> ::wf_sdk::__private::Vec<::wf_sdk::__private::Handler<Self>> {
                #(#asserts)*
                ::wf_sdk::__private::Vec::from([#(#handlers),*])
            }
        }
    }
}

/// `assert_wire::<T>()`, spanned on `T` so a type that cannot cross the wire is reported
/// where the user wrote it.
fn assert_wire(ty: &Type) -> TokenStream {
    quote_spanned!(ty.span()=> ::wf_sdk::__private::assert_wire::<#ty>();)
}

/// Fresh names for the decoded arguments: `__arg0, __arg1, ..`.
fn arg_vars(n: usize) -> Vec<Ident> {
    (0..n).map(|i| format_ident!("__arg{}", i)).collect()
}

/// The handler table entry of a signal, query or update.
fn handler(wf: &Workflow, m: &Method) -> TokenStream {
    let p = quote!(::wf_sdk::__private);
    let name = m.wire_name();
    let ident = m.ident();
    let tys: Vec<&Type> = m.args.iter().map(|a| a.ty).collect();
    let vars = arg_vars(tys.len());
    let args_ty = quote!((#(#tys,)*));
    let decode = quote!(let (#(#vars,)*) = __payload.decode::<#args_ty>()?;);
    let unfinished = match &m.role {
        Role::Signal {
            unfinished: Unfinished::Abandon,
            ..
        }
        | Role::Update {
            unfinished: Unfinished::Abandon,
            ..
        } => {
            quote!(#p::Unfinished::Abandon)
        }
        _ => quote!(#p::Unfinished::Warn),
    };
    let sync_fn = quote!(|__state: &mut Self, __payload: &#p::Payload|);
    let async_fn = quote!(|__ctx: #p::WorkflowContext<Self>, __payload: &#p::Payload|);
    let kind = match (&m.role, m.is_async()) {
        (Role::Signal { .. }, false) => quote! {
            #p::HandlerKind::SyncSignal(#sync_fn -> #p::Result<(), #p::PayloadError> {
                #decode
                Self::#ident(__state, #(#vars),*);
                #p::Ok(())
            })
        },
        (Role::Signal { .. }, true) => quote! {
            #p::HandlerKind::AsyncSignal(#async_fn -> #p::Result<#p::LocalBoxFuture<()>, #p::PayloadError> {
                #decode
                let __future: #p::LocalBoxFuture<()> = #p::Box::pin(async move {
                    let mut __ctx = __ctx;
                    Self::#ident(&mut __ctx, #(#vars),*).await;
                });
                #p::Ok(__future)
            })
        },
        (Role::Query { .. }, _) => quote! {
            #p::HandlerKind::Query(|__state: &Self, __payload: &#p::Payload| -> #p::Result<#p::Payload, #p::PayloadError> {
                #decode
                #p::Payload::encode(&Self::#ident(__state, #(#vars),*))
            })
        },
        (Role::Update { .. }, is_async) => {
            let call = respan(quote!(#p::encode_update_result), m.output_span());
            let validator = match wf.validators_of(ident).next() {
                Some(v) => {
                    let validator = validator(v, &vars, &decode);
                    quote!(#p::Some(#validator))
                }
                None => quote!(#p::None),
            };
            if is_async {
                quote! {
                    #p::HandlerKind::AsyncUpdate {
                        handler: #async_fn -> #p::Result<
                            #p::LocalBoxFuture<#p::Result<#p::Payload, #p::UpdateError>>,
                            #p::PayloadError,
                        > {
                            #decode
                            let __future: #p::LocalBoxFuture<#p::Result<#p::Payload, #p::UpdateError>> =
                                #p::Box::pin(async move {
                                    let mut __ctx = __ctx;
                                    #call(Self::#ident(&mut __ctx, #(#vars),*).await)
                                });
                            #p::Ok(__future)
                        },
                        validator: #validator,
                    }
                }
            } else {
                quote! {
                    #p::HandlerKind::SyncUpdate {
                        handler: #sync_fn -> #p::Result<#p::Result<#p::Payload, #p::UpdateError>, #p::PayloadError> {
                            #decode
                            #p::Ok(#call(Self::#ident(__state, #(#vars),*)))
                        },
                        validator: #validator,
                    }
                }
            }
        }
        _ => unreachable!("only handlers have table entries"),
    };
    quote! {
        #p::Handler {
            name: #name,
            check_args: |__payload: &#p::Payload| -> #p::Result<(), #p::PayloadError> {
                __payload.decode::<#args_ty>().map(|_| ())
            },
            kind: #kind,
            unfinished: #unfinished,
        }
    }
}

/// A validator entry: decodes the update's arguments and lends them to the validator.
fn validator(v: &Method, vars: &[Ident], decode: &TokenStream) -> TokenStream {
    let p = quote!(::wf_sdk::__private);
    let ident = v.ident();
    // Each `&__argN` is spanned on the validator's parameter type, and the call on its return
    // type, so a type that does not match the update's points at the validator's signature.
    let lent = vars
        .iter()
        .zip(&v.args)
        .map(|(var, arg)| quote_spanned!(arg.ty.span()=> &#var));
    let call = respan(quote!(Self::#ident), v.output_span());
    quote! {
        |__state: &Self, __payload: &#p::Payload| -> #p::Result<#p::Result<(), #p::Rejection>, #p::PayloadError> {
            #decode
            #p::Ok(#call(__state, #(#lent),*))
        }
    }
}

fn activities_impl(group: &Activities) -> TokenStream {
    let p = quote!(::wf_sdk::__private);
    let item = ast::without_role_attrs(group.item);
    let self_ty = group.self_ty;
    let acts = &group.activities;
    let idents: Vec<&Ident> = acts.iter().map(|a| a.ident()).collect();
    let names: Vec<String> = acts.iter().map(|a| a.wire_name()).collect();
    let asserts = acts.iter().flat_map(|a| {
        let ok = a.output.and_then(ty::result_ok);
        a.args.iter().map(|arg| arg.ty).chain(ok).map(assert_wire)
    });
    let invokers = acts.iter().zip(&names).map(|(a, name)| {
        let ident = a.ident();
        let tys: Vec<&Type> = a.args.iter().map(|arg| arg.ty).collect();
        let vars = arg_vars(tys.len());
        // Activity input: nothing is `()`, one argument travels bare, several as a tuple.
        let decode = match tys.as_slice() {
            [] => quote!(let () = __input.decode::<()>()?;),
            [ty] => quote!(let __arg0 = __input.decode::<#ty>()?;),
            _ => quote!(let (#(#vars,)*) = __input.decode::<(#(#tys,)*)>()?;),
        };
        let call = respan(quote!(__group.#ident), ident.span());
        quote! {
            {
                let __group = #p::Arc::clone(&self);
                __registry.add(#name, #p::Arc::new(
                    move |__ctx: #p::ActivityContext, __input: #p::Payload|
                        -> #p::BoxFuture<#p::Result<#p::Payload, #p::ActivityError>>
                    {
                        let __group = #p::Arc::clone(&__group);
                        let __future: #p::BoxFuture<#p::Result<#p::Payload, #p::ActivityError>> =
                            #p::Box::pin(async move {
                                #decode
                                let __output = #call(__ctx, #(#vars),*).await?;
                                #p::Ok(#p::Payload::encode(&__output)?)
                            });
                        __future
                    },
                ));
            }
        }
    });
    let (f, registry) = if acts.is_empty() {
        (quote!(_), quote!(_))
    } else {
        (quote!(__f), quote!(__registry))
    };
    quote! {
        #item
        const _: () = {
            impl #p::ActivityGroup for #self_ty {
                fn activity_name(#f: #p::TypeId) -> #p::Option<&'static str> {
                    #(
                        if __f == #p::type_id_of_val(&Self::#idents) {
                            return #p::Some(#names);
                        }
                    )*
                    #p::None
                }

                fn register(self: #p::Arc<Self>, #registry: &mut #p::ActivityRegistry) {
                    #(#asserts)*
                    #(#invokers)*
                }
            }
        };
    }
}

/// `tokens` with every span set to `span`: generated code that rustc may reject is made to
/// point at the user's tokens it depends on.
pub(crate) fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tt| {
            if let proc_macro2::TokenTree::Group(g) = &tt {
                let mut group = proc_macro2::Group::new(g.delimiter(), respan(g.stream(), span));
                group.set_span(span);
                tt = proc_macro2::TokenTree::Group(group);
            } else {
                tt.set_span(span);
            }
            tt
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand(input: TokenStream) -> String {
        workflow(TokenStream::new(), input).to_string()
    }

    #[test]
    fn a_valid_workflow_generates_definition_and_client() {
        let out = expand(quote! {
            impl AgentRun {
                #[run] async fn run(ctx: &mut WorkflowContext<Self>, input: String) -> Result<u32, WorkflowError> { Ok(0) }
                #[signal(name = "hold")] fn pause(&mut self) {}
                #[query] fn status(&self) -> u32 { 0 }
                #[update(unfinished = "abandon")] async fn set(ctx: &mut WorkflowContext<Self>, v: u32) -> Result<u32, UpdateError> { Ok(v) }
                #[validator(set)] fn check(&self, v: &u32) -> Result<(), Rejection> { Ok(()) }
            }
        });
        assert!(!out.contains("compile_error"), "{out}");
        for needle in [
            "impl :: wf_sdk :: __private :: WorkflowDefinition for AgentRun",
            "const NAME : & 'static str = \"AgentRun\"",
            "type Input = String",
            "type Output = u32",
            "name : \"hold\"",
            "HandlerKind :: SyncSignal",
            "HandlerKind :: Query",
            "HandlerKind :: AsyncUpdate",
            "Unfinished :: Abandon",
            "pub trait AgentRunClient",
            "WorkflowHandle < AgentRun >",
            "fn pause (& self) -> :: wf_sdk :: __private :: SignalCall < '_ >",
            "fn set (& self , v : u32) -> :: wf_sdk :: __private :: UpdateCall < '_ , u32 >",
        ] {
            assert!(out.contains(needle), "missing {needle:?} in\n{out}");
        }
        // The role attributes are consumed: none reaches rustc.
        assert!(!out.contains("# [signal"), "{out}");
        assert!(!out.contains("# [validator"), "{out}");
    }

    #[test]
    fn a_mistake_gives_its_error_and_the_fallback() {
        let out = expand(quote! {
            impl AgentRun {
                #[run] async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> { Ok(()) }
                #[query] async fn status(&self) -> u32 { 0 }
            }
        });
        assert_eq!(out.matches("compile_error").count(), 1, "{out}");
        assert!(out.contains("pub trait AgentRunClient"), "{out}");
        assert!(out.contains("WorkflowDefinition for AgentRun"), "{out}");
        assert!(!out.contains("# [query"), "{out}");
    }

    #[test]
    fn workflow_on_a_struct_is_an_error() {
        let out = expand(quote!(
            struct S;
        ));
        assert!(out.contains("goes on an impl block"), "{out}");
        assert!(out.contains("struct S"), "{out}");
    }

    #[test]
    fn activities_follow_the_input_convention() {
        let out = activities(
            TokenStream::new(),
            quote! {
                impl Tools {
                    #[activity] async fn zero(&self, ctx: ActivityContext) -> Result<(), ActivityError> { Ok(()) }
                    #[activity] async fn one(&self, ctx: ActivityContext, a: String) -> Result<u32, ActivityError> { Ok(1) }
                    #[activity(name = "pair")] async fn two(&self, ctx: ActivityContext, a: u32, b: u32) -> Result<u32, ActivityError> { Ok(a + b) }
                }
            },
        )
        .to_string();
        assert!(!out.contains("compile_error"), "{out}");
        assert!(
            out.contains("let () = __input . decode :: < () > () ?"),
            "{out}"
        );
        assert!(
            out.contains("let __arg0 = __input . decode :: < String > () ?"),
            "{out}"
        );
        assert!(
            out.contains("let (__arg0 , __arg1 ,) = __input . decode :: < (u32 , u32 ,) > () ?"),
            "{out}"
        );
        assert!(
            out.contains("return :: wf_sdk :: __private :: Some (\"pair\")"),
            "{out}"
        );
    }
}
