//! The pipelines (parse, view, check, then generate or fall back) and the code generation for
//! a checked workflow or activity group. Nothing here can fail: by the time code is generated
//! every rule in `check.rs` holds, and what is left for rustc (types, serde impls) is spanned
//! on the user's tokens.
//!
//! Every name the generated code uses is either wf's, through the private path `p`
//! (`::wf_sdk::__private` by default), `::core`'s, the user's own tokens, or a hygienic
//! local (`hygiene.rs`).

use crate::ast::{self, Activities, Method, Workflow};
use crate::attr::{self, Role, Unfinished};
use crate::ctxt::Ctxt;
use crate::hygiene::{self, local};
use crate::{client, fallback, spans, ty};
use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, ToTokens};
use syn::ItemImpl;

/// Why the real expansion always has a private path: a rejected `crate = ".."` is an error,
/// and after an error only the fallback runs.
const CRATE_CHECKED: &str = "checked: an invalid `crate` path is reported";

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
    let args = attr::activities_args(&cx, args);
    let group = Activities::from_syn(&cx, &item, args);
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
    let p = &wf.krate.private().expect(CRATE_CHECKED);
    let item = ast::without_role_attrs(wf.item, &wf.krate);
    let client::Client {
        declaration,
        implementation,
    } = crate::child_handle::client_and_child(wf, p, client::Bodies::Real);
    let definition = definition(wf, p);
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
fn definition(wf: &Workflow, p: &TokenStream) -> TokenStream {
    let handlers = local("__handlers");
    let self_ty = wf.self_ty;
    let name = &wf.name;
    let run = wf.run().expect("checked: one #[run]");
    let run_output = run.output.expect("checked: run returns Result<T, _>");
    // `Output` is the user's own tokens: its serde bounds are reported on it.
    let output_ty = ty::result_ok(run_output).expect("checked: run returns Result<T, _>");
    let output_name = ty::written(output_ty);
    let entry_points = if wf.dynamic {
        crate::dynamic_workflow::entry_points(wf, p)
    } else {
        entry_points(wf, p)
    };
    let dynamic = crate::dynamic::definition_item(wf, p);
    let entries = wf.handlers().map(|m| {
        let (cfgs, entry) = (m.cfgs(), handler(wf, m, p));
        quote!(#(#cfgs)* #handlers.push(#entry);)
    });

    quote! {
        impl #p::WorkflowDefinition for #self_ty {
            const NAME: &'static str = #name;
            type Output = #output_ty;

            #entry_points

            fn output_type_name() -> &'static str {
                #output_name
            }

            #[allow(clippy::vec_init_then_push)]
            fn handlers() -> #p::Vec<#p::Handler<Self>> {
                let mut #handlers = #p::Vec::new();
                #(#entries)*
                #handlers
            }

            #dynamic
        }
    }
}

/// The `Input` type, `init_state`, `start_run` and `input_type_name` of a workflow type.
fn entry_points(wf: &Workflow, p: &TokenStream) -> TokenStream {
    let [ctx, input, output] = ["__ctx", "__input", "__output"].map(local);
    let self_ty = wf.self_ty;
    let run = wf.run().expect("checked: one #[run]");
    let run_ident = run.ident();
    let run_output = run.output.expect("checked: run returns Result<T, _>");
    // `Input` is the user's own tokens: its serde bounds are reported on it.
    let run_input = run.args.first();
    let input_ty = run_input.map_or_else(|| quote!(()), |a| a.ty.to_token_stream());
    let input_name = run_input.map_or_else(|| "()".to_string(), |a| ty::written(a.ty));
    let (input_param, run_call) = match run_input {
        Some(_) => (
            quote!(#input),
            quote!(Self::#run_ident(&mut #ctx, #input).await),
        ),
        None => (quote!(_), quote!(Self::#run_ident(&mut #ctx).await)),
    };
    // A run returning another error type than `WorkflowError` is reported on its return type.
    let run_call = spans::over(run_call, run_output);

    let init_state = match wf.init() {
        Some(init) => {
            let ident = init.ident();
            match init.args.first() {
                Some(arg) => {
                    // A parameter that is not `&Input` is reported on its type.
                    let borrowed = spans::over(quote!(&*(#input)), arg.ty);
                    quote!(fn init_state(#input: &Self::Input) -> Self { Self::#ident(#borrowed) })
                }
                None => quote!(fn init_state(_: &Self::Input) -> Self { Self::#ident() }),
            }
        }
        None => crate::init_state::default_init_state(self_ty, p),
    };
    quote! {
        type Input = #input_ty;

        #init_state

        fn start_run(
            #ctx: #p::WorkflowContext<Self>,
            #input_param: Self::Input,
        ) -> #p::LocalBoxFuture<#p::Result<Self::Output, #p::WorkflowError>> {
            #p::Box::pin(async move {
                let mut #ctx = #ctx;
                let #output: #p::Result<Self::Output, #p::WorkflowError> = #run_call;
                #output
            })
        }

        fn input_type_name() -> &'static str {
            #input_name
        }
    }
}

/// The handler table entry of a signal, query or update.
///
/// Every serde bound is checked once, at a site whose type argument is the user's own type:
/// decoding the argument tuple here, encoding it in the client, encoding the result here and
/// decoding it in the client. A type without `Serialize` or `Deserialize` thus gets one error
/// per missing derive, on the type.
fn handler(wf: &Workflow, m: &Method, p: &TokenStream) -> TokenStream {
    let [ctx, state, payload, future, result] =
        ["__ctx", "__state", "__payload", "__future", "__result"].map(local);
    let name = m.wire_name();
    let ident = m.ident();
    let vars = hygiene::args(m.args.len());
    let args_ty = spans::wire_tuple(m, m.args.iter().map(|a| a.ty.to_token_stream()).collect());
    let decode = quote!(let (#(#vars,)*) = #payload.decode::<#args_ty>()?;);
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
    let sync_fn = quote!(|#state: &mut Self, #payload: &#p::Payload|);
    let async_fn = quote!(|#ctx: #p::WorkflowContext<Self>, #payload: &#p::Payload|);
    let kind = match (&m.role, m.is_async()) {
        (Role::Signal { .. }, false) => quote! {
            #p::HandlerKind::SyncSignal(#sync_fn -> #p::Result<(), #p::PayloadError> {
                #decode
                Self::#ident(#state, #(#vars),*);
                #p::Ok(())
            })
        },
        (Role::Signal { .. }, true) => quote! {
            #p::HandlerKind::AsyncSignal(#async_fn -> #p::Result<#p::LocalBoxFuture<()>, #p::PayloadError> {
                #decode
                let #future: #p::LocalBoxFuture<()> = #p::Box::pin(async move {
                    let mut #ctx = #ctx;
                    Self::#ident(&mut #ctx, #(#vars),*).await;
                });
                #p::Ok(#future)
            })
        },
        (Role::Query { .. }, _) => {
            let output = m
                .output
                .map_or_else(|| quote!(()), ToTokens::to_token_stream);
            quote! {
                #p::HandlerKind::Query(|#state: &Self, #payload: &#p::Payload| -> #p::Result<#p::Payload, #p::PayloadError> {
                    #decode
                    #p::Payload::encode::<#output>(&Self::#ident(#state, #(#vars),*))
                })
            }
        }
        (Role::Update { .. }, is_async) => {
            let output = m.output.expect("checked: an update returns Result<T, _>");
            let value = ty::result_ok(output).expect("checked: an update returns Result<T, _>");
            let call = if is_async {
                quote!(Self::#ident(&mut #ctx, #(#vars),*).await)
            } else {
                quote!(Self::#ident(#state, #(#vars),*))
            };
            // Another error type than `UpdateError` is reported on the return type.
            let call = spans::over(call, output);
            let encoded = quote! {
                let #result: #p::Result<#value, #p::UpdateError> = #call;
                #p::encode_update_result::<#value>(#result)
            };
            let validator = match wf.validators_of(ident).next() {
                Some(v) => {
                    let validator = validator(v, &vars, &decode, p);
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
                            let #future: #p::LocalBoxFuture<#p::Result<#p::Payload, #p::UpdateError>> =
                                #p::Box::pin(async move {
                                    let mut #ctx = #ctx;
                                    #encoded
                                });
                            #p::Ok(#future)
                        },
                        validator: #validator,
                    }
                }
            } else {
                quote! {
                    #p::HandlerKind::SyncUpdate {
                        handler: #sync_fn -> #p::Result<#p::Result<#p::Payload, #p::UpdateError>, #p::PayloadError> {
                            #decode
                            #p::Ok({ #encoded })
                        },
                        validator: #validator,
                    }
                }
            }
        }
        _ => unreachable!("only handlers have table entries"),
    };
    let metadata = handler_metadata(m, p);
    quote! {
        #p::Handler {
            name: #name,
            check_args: |#payload: &#p::Payload| -> #p::Result<(), #p::PayloadError> {
                #payload.decode::<#args_ty>().map(|_| ())
            },
            kind: #kind,
            unfinished: #unfinished,
            #metadata
        }
    }
}

/// A handler's parameters and return type as written (strings only: no code that names the
/// user's types again, so a missing serde derive still gets exactly one error).
fn handler_metadata(m: &Method, p: &TokenStream) -> TokenStream {
    let params = m.args.iter().enumerate().map(|(i, a)| {
        let name = match a.pat {
            syn::Pat::Ident(pat) => pat.ident.to_string(),
            _ => format!("arg{i}"),
        };
        let ty = ty::written(a.ty);
        quote!(#p::Param { name: #name, ty: #ty })
    });
    let returned = match (&m.role, m.output) {
        (Role::Update { .. }, Some(output)) => ty::result_ok(output),
        (Role::Query { .. }, Some(output)) => Some(output),
        _ => None,
    };
    let returns = returned.map_or_else(|| "()".to_string(), ty::written);
    quote! {
        params: &[#(#params),*],
        returns: #returns,
    }
}

/// A validator entry: decodes the update's arguments and lends them to the validator.
fn validator(v: &Method, vars: &[Ident], decode: &TokenStream, p: &TokenStream) -> TokenStream {
    let [state, payload, verdict] = ["__state", "__payload", "__verdict"].map(local);
    let ident = v.ident();
    // A parameter that is not `&` the update's type is reported on that parameter's type, an
    // error type other than `Rejection` on the return type.
    let lent = vars
        .iter()
        .zip(&v.args)
        .map(|(var, arg)| spans::over(quote!(&(#var)), arg.ty));
    let output = v
        .output
        .expect("checked: a validator returns Result<(), _>");
    let call = spans::over(quote!(Self::#ident(#state, #(#lent),*)), output);
    quote! {
        |#state: &Self, #payload: &#p::Payload| -> #p::Result<#p::Result<(), #p::Rejection>, #p::PayloadError> {
            #decode
            let #verdict: #p::Result<(), #p::Rejection> = #call;
            #p::Ok(#verdict)
        }
    }
}

fn activities_impl(group: &Activities) -> TokenStream {
    let p = &group.krate.private().expect(CRATE_CHECKED);
    let item = ast::without_role_attrs(group.item, &group.krate);
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
    let [f, registry] = ["__f", "__registry"].map(local);
    let invokers = acts.iter().zip(&names).zip(&cfgs).map(|((a, name), cfgs)| {
        let invoker = activity_invoker(a, name, &registry, p);
        quote!(#cfgs { #invoker })
    });
    let (f_param, registry_param) = if acts.is_empty() {
        (quote!(_), quote!(_))
    } else {
        (quote!(#f), quote!(#registry))
    };
    quote! {
        #item
        const _: () = {
            impl #p::ActivityGroup for #self_ty {
                fn activity_name(#f_param: #p::TypeId) -> #p::Option<&'static str> {
                    #(
                        #cfgs
                        if #f == #p::type_id_of_val(&Self::#idents) {
                            return #p::Some(#names);
                        }
                    )*
                    #p::None
                }

                fn register(self: #p::Arc<Self>, #registry_param: &mut #p::ActivityRegistry) {
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
fn activity_invoker(a: &Method, name: &str, registry: &Ident, p: &TokenStream) -> TokenStream {
    let [ctx, input, output, group, future] =
        ["__ctx", "__input", "__output", "__group", "__future"].map(local);
    let ident = a.ident();
    let vars = hygiene::args(a.args.len());
    let input_ty = match a.args.as_slice() {
        [] => quote!(()),
        [only] => only.ty.to_token_stream(),
        _ => spans::wire_tuple(
            a,
            a.args.iter().map(|arg| arg.ty.to_token_stream()).collect(),
        ),
    };
    let bind = match vars.as_slice() {
        [only] => quote!(#only),
        _ => quote!((#(#vars,)*)),
    };
    let output_ty = a
        .output
        .and_then(ty::result_ok)
        .expect("checked: an activity returns Result<T, _>");
    // A future that is not `Send` is reported on the method's name.
    let body = spans::over(
        quote! {
            async move {
                let #bind = #input.decode::<#input_ty>()?;
                let #output = #group.#ident(#ctx, #(#vars),*).await?;
                #p::Ok(#p::Payload::encode::<#output_ty>(&#output)?)
            }
        },
        ident,
    );
    let boxed = spans::over(quote!(#p::Box::pin(#body)), ident);
    quote! {
        {
            let _ = |#input: &#input_ty| #p::Payload::encode::<#input_ty>(#input);
            let _ = |#output: &#p::Payload| #output.decode::<#output_ty>();
            let #group = #p::Clone::clone(&self);
            #registry.add(#name, #p::Arc::new(
                move |#ctx: #p::ActivityContext, #input: #p::Payload|
                    -> #p::BoxFuture<#p::Result<#p::Payload, #p::ActivityError>>
                {
                    let #group = #p::Clone::clone(&#group);
                    let #future: #p::BoxFuture<#p::Result<#p::Payload, #p::ActivityError>> = #boxed;
                    #future
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
            ":: wf_sdk :: __private :: signal_call (self , \"hold\" ,",
            ":: wf_sdk :: __private :: query_call :: < AgentRun , u32 > (self , \"status\" ,",
            ":: wf_sdk :: __private :: update_call :: < AgentRun , u32 > (self , \"set\" ,",
        ] {
            assert!(out.contains(needle), "missing {needle:?} in\n{out}");
        }
        // The role attributes are consumed: none reaches rustc.
        assert!(!out.contains("# [signal"), "{out}");
        assert!(!out.contains("# [validator"), "{out}");
    }

    #[test]
    fn nothing_comes_from_the_prelude() {
        // The user's own code spells every prelude name in full, so any bare one is generated.
        let user = quote! {
            impl W {
                #[run] async fn run(ctx: &mut WorkflowContext<Self>, i: u32) -> ::core::result::Result<u32, WorkflowError> { todo!() }
                #[signal] fn s(&mut self, a: u32) {}
                #[signal] async fn t(ctx: &mut WorkflowContext<Self>) {}
                #[query] fn q(&self) -> u32 { 0 }
                #[update] fn u(&mut self, a: u32) -> ::core::result::Result<u32, UpdateError> { todo!() }
                #[update] async fn v(ctx: &mut WorkflowContext<Self>) -> ::core::result::Result<(), UpdateError> { todo!() }
                #[validator(u)] fn check(&self, a: &u32) -> ::core::result::Result<(), Rejection> { todo!() }
            }
        };
        let out = expand(user.clone());
        let group = quote! {
            impl T {
                #[activity] async fn a(&self, ctx: ActivityContext, x: u32, y: u32) -> ::core::result::Result<u32, ActivityError> { todo!() }
            }
        };
        let out = out + &activities(TokenStream::new(), group).to_string();
        assert!(!out.contains("compile_error"), "{out}");
        for bare in [
            "Box", "Vec", "Option", "Some", "None", "Result", "Ok", "Err", "Default", "String",
            "Arc", "TypeId", "Into", "From", "Clone",
        ] {
            let all = out.matches(&format!(" {bare} ")).count();
            let qualified = out.matches(&format!(":: {bare} ")).count();
            assert_eq!(all, qualified, "a bare `{bare}` in\n{out}");
        }
    }

    #[test]
    fn crate_overrides_the_private_path() {
        let out = workflow(
            quote!(crate = "::my_wf"),
            quote! {
                impl W {
                    #[run] async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> { Ok(()) }
                    #[my_wf::signal] fn go(&mut self) {}
                }
            },
        )
        .to_string();
        assert!(!out.contains("compile_error"), "{out}");
        assert!(!out.contains("wf_sdk"), "{out}");
        assert!(
            out.contains("impl :: my_wf :: __private :: WorkflowDefinition for W"),
            "{out}"
        );
        assert!(
            out.contains(":: my_wf :: __private :: signal_call (self , \"go\""),
            "{out}"
        );
        let out = activities(
            quote!(crate = "::my_wf"),
            quote!(impl T { #[activity] async fn a(&self, ctx: ActivityContext) -> Result<(), ActivityError> { Ok(()) } }),
        )
        .to_string();
        assert!(!out.contains("wf_sdk"), "{out}");
        assert!(
            out.contains("impl :: my_wf :: __private :: ActivityGroup for T"),
            "{out}"
        );
    }

    #[test]
    fn an_invalid_crate_falls_back_to_the_user_impl_alone() {
        let out = workflow(
            quote!(crate = "not a path"),
            quote! {
                impl W {
                    #[run] async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> { Ok(()) }
                }
            },
        )
        .to_string();
        assert_eq!(out.matches("compile_error").count(), 1, "{out}");
        assert!(
            !out.contains("__private") && !out.contains("WClient"),
            "{out}"
        );
        assert!(out.contains("impl W"), "{out}");
    }

    #[test]
    fn client_parameters_are_the_users_in_the_declaration_only() {
        let out = expand(quote! {
            impl W {
                #[run] async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> { Ok(()) }
                #[signal] fn s(&mut self, (a, b): (u32, u32), arg1: u32, __arg0: u8) {}
            }
        });
        assert!(
            out.contains("fn s (& self , _ : (u32 , u32) , arg1 : u32 , __arg0 : u8) ->"),
            "{out}"
        );
        assert!(
            out.contains("fn s (& self , __arg0 : (u32 , u32) , __arg1 : u32 , __arg2 : u8)"),
            "{out}"
        );
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
