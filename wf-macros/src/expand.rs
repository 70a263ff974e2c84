//! The pipelines (parse, view, check, then generate or fall back) and the code generation for
//! a checked workflow or activity group. Nothing here can fail: by the time code is generated
//! every rule in `check.rs` holds, and what is left for rustc (types, serde impls) is spanned
//! on the user's tokens.

use crate::ast::{self, Activities, Method, Workflow};
use crate::attr::{self, Role, Unfinished};
use crate::ctxt::Ctxt;
use crate::{client, fallback, spans, ty};
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote, ToTokens};
use syn::ItemImpl;

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
    let client::Client {
        declaration,
        implementation,
    } = client::client(wf, client::Bodies::Real);
    let definition = definition(wf);
    quote! {
        #item
        #declaration
        const _: () = {
            #definition
            #implementation
        };
    }
}

/// `impl WorkflowDefinition for T`.
fn definition(wf: &Workflow) -> TokenStream {
    let p = quote!(::wf_sdk::__private);
    let self_ty = wf.self_ty;
    let name = &wf.name;
    let run = wf.run().expect("checked: one #[run]");
    let run_ident = run.ident();
    let run_output = run.output.expect("checked: run returns Result<T, _>");
    // `Input`/`Output` are the user's own tokens: their serde bounds are reported on them.
    let input = run.args.first();
    let input_ty = input.map_or_else(|| quote!(()), |a| a.ty.to_token_stream());
    let output_ty = ty::result_ok(run_output).expect("checked: run returns Result<T, _>");

    let (input_param, run_call) = match input {
        Some(_) => (
            quote!(__input),
            quote!(Self::#run_ident(&mut __ctx, __input).await),
        ),
        None => (quote!(_), quote!(Self::#run_ident(&mut __ctx).await)),
    };
    // A run returning another error type than `WorkflowError` is reported on its return type.
    let run_call = spans::over(run_call, run_output);

    let init_state = match wf.init() {
        Some(init) => {
            let ident = init.ident();
            match init.args.first() {
                Some(arg) => {
                    // A parameter that is not `&Input` is reported on its type.
                    let input = spans::over(quote!(&*__input), arg.ty);
                    quote!(fn init_state(__input: &Self::Input) -> Self { Self::#ident(#input) })
                }
                None => quote!(fn init_state(_: &Self::Input) -> Self { Self::#ident() }),
            }
        }
        None => {
            // Without `#[init]` the type must be `Default`; rustc says so on the type's name.
            let default = spans::over(quote!(<Self as #p::Default>::default()), self_ty);
            quote!(fn init_state(_: &Self::Input) -> Self { #default })
        }
    };
    let handlers = wf.handlers().map(|m| {
        let (cfgs, entry) = (m.cfgs(), handler(wf, m));
        quote!(#(#cfgs)* __handlers.push(#entry);)
    });

    quote! {
        impl #p::WorkflowDefinition for #self_ty {
            const NAME: &'static str = #name;
            type Input = #input_ty;
            type Output = #output_ty;

            #init_state

            fn start_run(
                __ctx: #p::WorkflowContext<Self>,
                #input_param: Self::Input,
            ) -> #p::LocalBoxFuture<#p::Result<Self::Output, #p::WorkflowError>> {
                #p::Box::pin(async move {
                    let mut __ctx = __ctx;
                    let __output: #p::Result<Self::Output, #p::WorkflowError> = #run_call;
                    __output
                })
            }

            #[allow(clippy::vec_init_then_push)]
            fn handlers() -> #p::Vec<#p::Handler<Self>> {
                let mut __handlers = #p::Vec::new();
                #(#handlers)*
                __handlers
            }
        }
    }
}

/// Fresh names for the decoded arguments: `__arg0, __arg1, ..`.
fn arg_vars(n: usize) -> Vec<Ident> {
    (0..n).map(|i| format_ident!("__arg{}", i)).collect()
}

/// The handler table entry of a signal, query or update.
///
/// Every serde bound is checked once, at a site whose type argument is the user's own type:
/// decoding the argument tuple here, encoding it in the client, encoding the result here and
/// decoding it in the client. A type without `Serialize` or `Deserialize` thus gets one error
/// per missing derive, on the type.
fn handler(wf: &Workflow, m: &Method) -> TokenStream {
    let p = quote!(::wf_sdk::__private);
    let name = m.wire_name();
    let ident = m.ident();
    let vars = arg_vars(m.args.len());
    let args_ty = spans::wire_tuple(m, m.args.iter().map(|a| a.ty.to_token_stream()).collect());
    let decode = quote!(let (#(#vars,)*) = __payload.decode::<#args_ty>()?;);
    let unfinished = match &m.role {
        Role::Signal {
            unfinished: Unfinished::Abandon,
            ..
        }
        | Role::Update {
            unfinished: Unfinished::Abandon,
            ..
        } => quote!(#p::Unfinished::Abandon),
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
        (Role::Query { .. }, _) => {
            let output = m
                .output
                .map_or_else(|| quote!(()), ToTokens::to_token_stream);
            quote! {
                #p::HandlerKind::Query(|__state: &Self, __payload: &#p::Payload| -> #p::Result<#p::Payload, #p::PayloadError> {
                    #decode
                    #p::Payload::encode::<#output>(&Self::#ident(__state, #(#vars),*))
                })
            }
        }
        (Role::Update { .. }, is_async) => {
            let output = m.output.expect("checked: an update returns Result<T, _>");
            let value = ty::result_ok(output).expect("checked: an update returns Result<T, _>");
            let call = if is_async {
                quote!(Self::#ident(&mut __ctx, #(#vars),*).await)
            } else {
                quote!(Self::#ident(__state, #(#vars),*))
            };
            // Another error type than `UpdateError` is reported on the return type.
            let call = spans::over(call, output);
            let result = quote! {
                let __result: #p::Result<#value, #p::UpdateError> = #call;
                #p::encode_update_result::<#value>(__result)
            };
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
                                    #result
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
                            #p::Ok({ #result })
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
    // A parameter that is not `&` the update's type is reported on that parameter's type, an
    // error type other than `Rejection` on the return type.
    let lent = vars
        .iter()
        .zip(&v.args)
        .map(|(var, arg)| spans::over(quote!(&#var), arg.ty));
    let output = v
        .output
        .expect("checked: a validator returns Result<(), _>");
    let call = spans::over(quote!(Self::#ident(__state, #(#lent),*)), output);
    quote! {
        |__state: &Self, __payload: &#p::Payload| -> #p::Result<#p::Result<(), #p::Rejection>, #p::PayloadError> {
            #decode
            let __verdict: #p::Result<(), #p::Rejection> = #call;
            #p::Ok(__verdict)
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
    let cfgs: Vec<TokenStream> = acts
        .iter()
        .map(|a| {
            let cfgs = a.cfgs();
            quote!(#(#cfgs)*)
        })
        .collect();
    let invokers = acts.iter().zip(&names).zip(&cfgs).map(|((a, name), cfgs)| {
        let invoker = activity_invoker(a, name);
        quote!(#cfgs { #invoker })
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
                        #cfgs
                        if __f == #p::type_id_of_val(&Self::#idents) {
                            return #p::Some(#names);
                        }
                    )*
                    #p::None
                }

                fn register(self: #p::Arc<Self>, #registry: &mut #p::ActivityRegistry) {
                    #(#invokers)*
                }
            }
        };
    }
}

/// Registers one activity: decode the input, await the method, encode its value.
///
/// Activity input: nothing travels as `()`, one argument bare, several as a tuple. The
/// workflow side encodes the input and decodes the value; the two unused closures check those
/// directions here, on the user's types, instead of at every `ctx.activity(..)` call.
fn activity_invoker(a: &Method, name: &str) -> TokenStream {
    let p = quote!(::wf_sdk::__private);
    let ident = a.ident();
    let vars = arg_vars(a.args.len());
    let input_ty = match a.args.as_slice() {
        [] => quote!(()),
        [only] => only.ty.to_token_stream(),
        _ => spans::wire_tuple(
            a,
            a.args.iter().map(|arg| arg.ty.to_token_stream()).collect(),
        ),
    };
    let bind = match a.args.len() {
        1 => quote!(__arg0),
        _ => quote!((#(#vars,)*)),
    };
    let output = a
        .output
        .and_then(ty::result_ok)
        .expect("checked: an activity returns Result<T, _>");
    // A future that is not `Send` is reported on the method's name.
    let body = spans::over(
        quote! {
            async move {
                let #bind = __input.decode::<#input_ty>()?;
                let __output = __group.#ident(__ctx, #(#vars),*).await?;
                #p::Ok(#p::Payload::encode::<#output>(&__output)?)
            }
        },
        ident,
    );
    let future = spans::over(quote!(#p::Box::pin(#body)), ident);
    quote! {
        {
            let _ = |__input: &#input_ty| #p::Payload::encode::<#input_ty>(__input);
            let _ = |__output: &#p::Payload| __output.decode::<#output>();
            let __group = #p::Arc::clone(&self);
            __registry.add(#name, #p::Arc::new(
                move |__ctx: #p::ActivityContext, __input: #p::Payload|
                    -> #p::BoxFuture<#p::Result<#p::Payload, #p::ActivityError>>
                {
                    let __group = #p::Arc::clone(&__group);
                    let __future: #p::BoxFuture<#p::Result<#p::Payload, #p::ActivityError>> = #future;
                    __future
                },
            ));
        }
    }
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
