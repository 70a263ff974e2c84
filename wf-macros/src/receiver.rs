//! The receivers a handler may take, shared by the checks of named handlers (`check.rs`) and
//! of dynamic ones (`dynamic.rs`): an async method takes the context, a sync one `&mut self`
//! or `&self`; and the shape of a workflow's `#[run]` and `#[init]`, shared by named and
//! dynamic workflow types (`dynamic_workflow.rs`). Each check reports the first mistake only,
//! with how to fix it.

use crate::ast::Method;
use crate::ctxt::Ctxt;
use crate::ty::{self, Borrow};

/// How the context parameter is written, in messages.
pub(crate) const CTX: &str = "ctx: &mut WorkflowContext<Self>";

/// The context parameter of an async method: present, and borrowed.
pub(crate) fn async_ctx(cx: &Ctxt, m: &Method, what: &str) -> bool {
    if let Some(receiver) = &m.receiver {
        cx.error_spanned_by(
            receiver.node,
            format!(
                "an async {what} takes no `self`: take `{CTX}` and reach state through \
                 `ctx.state(|s| ..)` / `ctx.state_mut(|s| ..)`, so no borrow lives across an `.await`"
            ),
        );
        return false;
    }
    match &m.ctx {
        None => {
            cx.syn_error(syn::Error::new(
                m.params_span(),
                format!("an async {what} takes the workflow context first: `{CTX}`"),
            ));
            false
        }
        Some(ctx) if ctx.borrow == Borrow::Owned => {
            cx.error_spanned_by(
                &ctx.node.ty,
                "take the context by reference: `&mut WorkflowContext<Self>`",
            );
            false
        }
        Some(_) => true,
    }
}

/// The receiver of a sync method that changes state: `&mut self`, no context.
pub(crate) fn sync_mut_self(cx: &Ctxt, m: &Method, what: &str) -> bool {
    if let Some(ctx) = &m.ctx {
        cx.error_spanned_by(
            ctx.node,
            format!("a sync {what} takes `&mut self`, not the context; make it an `async fn` to use `ctx`"),
        );
        return false;
    }
    match &m.receiver {
        Some(r) if r.borrow == Borrow::Mut => true,
        Some(r) => {
            let wrote = if r.borrow == Borrow::Ref {
                "`&self`"
            } else {
                "`self`"
            };
            cx.error_spanned_by(
                r.node,
                format!("a sync {what} changes state: take `&mut self`, not {wrote}"),
            );
            false
        }
        None => {
            cx.syn_error(syn::Error::new(
                m.params_span(),
                format!(
                    "a sync {what} takes `&mut self` first (or make it an `async fn` taking `{CTX}`)"
                ),
            ));
            false
        }
    }
}

/// The receiver of a method that only reads state: `&self`, no context, not async.
pub(crate) fn sync_ref_self(cx: &Ctxt, m: &Method, what: &str, why: &str) -> bool {
    if let Some(asyncness) = &m.sig.asyncness {
        cx.error_spanned_by(
            asyncness,
            format!("a {what} is a plain `fn(&self, ..)`: {why}; remove `async`"),
        );
        return false;
    }
    if let Some(ctx) = &m.ctx {
        cx.error_spanned_by(ctx.node, format!("a {what} takes `&self`, not the context"));
        return false;
    }
    match &m.receiver {
        Some(r) if r.borrow == Borrow::Ref => true,
        Some(r) => {
            let wrote = if r.borrow == Borrow::Mut {
                "`&mut self`"
            } else {
                "`self`"
            };
            cx.error_spanned_by(
                r.node,
                format!("a {what} only reads state: take `&self`, not {wrote}"),
            );
            false
        }
        None => {
            cx.syn_error(syn::Error::new(
                m.params_span(),
                format!("a {what} takes `&self` first"),
            ));
            false
        }
    }
}

/// `#[run]` is an `async fn` taking `ctx` and no `self`; false after reporting that it is not.
pub(crate) fn run_async_ctx(cx: &Ctxt, m: &Method) -> bool {
    if m.sig.asyncness.is_none() {
        let (fn_token, ident) = (&m.sig.fn_token, &m.sig.ident);
        cx.error_spanned_by(
            quote::quote!(#fn_token #ident),
            "`#[run]` must be an `async fn`: the main method awaits activities, timers and conditions",
        );
        return false;
    }
    async_ctx(cx, m, "`#[run]`")
}

/// `#[run]` returns `Result<Output, WorkflowError>`.
pub(crate) fn run_output(cx: &Ctxt, m: &Method) {
    match m.output {
        Some(output) if ty::result_ok(output).is_some() => {}
        _ => cx.syn_error(syn::Error::new(
            m.output_span(),
            "`#[run]` returns `Result<Output, WorkflowError>`",
        )),
    }
}

/// `#[init]` is a plain `fn` without `self`; false after reporting that it is not.
pub(crate) fn init_plain(cx: &Ctxt, m: &Method) -> bool {
    if let Some(asyncness) = &m.sig.asyncness {
        cx.error_spanned_by(
            asyncness,
            "`#[init]` must be a plain `fn`: it builds the state before anything runs; remove `async`",
        );
        return false;
    }
    if let Some(receiver) = &m.receiver {
        cx.error_spanned_by(
            receiver.node,
            "`#[init]` takes no `self`: it builds the state from the run's input",
        );
        return false;
    }
    true
}

/// `#[init]` returns `Self`.
pub(crate) fn init_output(cx: &Ctxt, m: &Method, self_name: Option<&syn::Ident>) {
    let self_name = self_name
        .cloned()
        .unwrap_or_else(|| syn::Ident::new("Self", proc_macro2::Span::call_site()));
    match m.output {
        Some(output) if ty::is_self(output, &self_name) => {}
        _ => cx.syn_error(syn::Error::new(
            m.output_span(),
            "`#[init]` returns `Self`, the initial state",
        )),
    }
}
