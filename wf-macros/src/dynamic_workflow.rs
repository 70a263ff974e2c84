//! Dynamic workflow types: `#[workflow(dynamic)]`, one registration that runs every workflow
//! type name no other registration of the engine has (Temporal's dynamic workflows). Its
//! `#[run]` takes the run's type name and its raw input, `#[init]` (optional) borrows them;
//! its handlers are the ordinary ones. Their rules and their code generation live here, apart
//! from a named type's (`check.rs`, `expand.rs`).

use crate::ast::{Method, Workflow};
use crate::ctxt::Ctxt;
use crate::dynamic::is;
use crate::hygiene::local;
use crate::receiver::{init_output, init_plain, run_async_ctx, run_output};
use crate::spans;
use proc_macro2::TokenStream;
use quote::quote;

/// The form a dynamic type's `#[run]` takes, for error messages.
const RUN_FORM: &str =
    "async fn run(ctx: &mut WorkflowContext<Self>, name: String, input: Payload) \
     -> Result<Output, WorkflowError>";

/// `#[run]` of a dynamic type: `ctx`, the type name, the raw input.
pub(crate) fn run(cx: &Ctxt, m: &Method) {
    if !run_async_ctx(cx, m) {
        return;
    }
    if name_and_input(cx, m, ("String", "Payload"), &format!("`{RUN_FORM}`")) {
        run_output(cx, m);
    }
}

/// `#[init]` of a dynamic type: nothing, or the type name and the raw input, borrowed.
pub(crate) fn init(cx: &Ctxt, m: &Method, self_name: Option<&syn::Ident>) {
    if !init_plain(cx, m) {
        return;
    }
    let form = format!(
        "`fn {}(name: &str, input: &Payload) -> Self` (or no parameters)",
        m.ident()
    );
    if let Some(ctx) = &m.ctx {
        cx.error_spanned_by(
            ctx.node,
            format!("`#[init]` takes no context; a dynamic workflow's `#[init]` is {form}"),
        );
        return;
    }
    if m.args.is_empty() || name_and_input(cx, m, ("&str", "&Payload"), &form) {
        init_output(cx, m, self_name);
    }
}

/// The parameters after `ctx`: the run's type name and its raw input, as `want` writes them.
fn name_and_input(cx: &Ctxt, m: &Method, want: (&str, &str), form: &str) -> bool {
    let role = if want.0.starts_with('&') {
        "`#[init]`"
    } else {
        "`#[run]`"
    };
    if m.args.len() != 2 {
        cx.syn_error(syn::Error::new(
            m.params_span(),
            format!(
                "a dynamic workflow's {role} takes the run's workflow type name and its raw \
                 input (decode it with `input.decode::<T>()`): {form}"
            ),
        ));
        return false;
    }
    for (arg, (what, ty)) in m
        .args
        .iter()
        .zip([("workflow type name", want.0), ("raw input", want.1)])
    {
        if !is(arg.ty, ty) {
            cx.error_spanned_by(
                arg.ty,
                format!("this parameter is the run's {what}: write `{ty}` ({form})"),
            );
            return false;
        }
    }
    true
}

/// The `Input` type (`DynamicInput`), its decoding and encoding, `init_state`, `start_run`
/// and `input_type_name` of a dynamic workflow type.
pub(crate) fn entry_points(wf: &Workflow, p: &TokenStream) -> TokenStream {
    let [ctx, input, output, workflow_type] =
        ["__ctx", "__input", "__output", "__workflow_type"].map(local);
    let run = wf.run().expect("checked: one #[run]");
    let run_ident = run.ident();
    let run_output = run.output.expect("checked: run returns Result<T, _>");
    let run_call = quote!(Self::#run_ident(&mut #ctx, #input.workflow_type, #input.args).await);
    // A run returning another error type than `WorkflowError` is reported on its return type.
    let run_call = spans::over(run_call, run_output);
    let init_state = match wf.init() {
        Some(init) if !init.args.is_empty() => {
            let ident = init.ident();
            quote! {
                fn init_state(#input: &Self::Input) -> Self {
                    Self::#ident(&#input.workflow_type, &#input.args)
                }
            }
        }
        Some(init) => {
            let ident = init.ident();
            quote!(fn init_state(_: &Self::Input) -> Self { Self::#ident() })
        }
        None => crate::init_state::default_init_state(wf.self_ty, p),
    };
    quote! {
        const DYNAMIC: bool = true;
        type Input = #p::DynamicInput;

        fn decode_input(
            #workflow_type: &str,
            #input: &#p::Payload,
        ) -> #p::Result<Self::Input, #p::PayloadError> {
            #p::DynamicInput::decode(#workflow_type, #input)
        }

        fn encode_input(#input: &Self::Input) -> #p::Result<#p::Payload, #p::PayloadError> {
            #input.encode()
        }

        #init_state

        fn start_run(
            #ctx: #p::WorkflowContext<Self>,
            #input: Self::Input,
        ) -> #p::LocalBoxFuture<#p::Result<Self::Output, #p::WorkflowError>> {
            #p::Box::pin(async move {
                let mut #ctx = #ctx;
                let #output: #p::Result<Self::Output, #p::WorkflowError> = #run_call;
                #output
            })
        }

        fn input_type_name() -> &'static str {
            "Payload"
        }
    }
}
