//! Dynamic handlers: `#[signal(dynamic)]`, `#[query(dynamic)]`, `#[update(dynamic)]` and
//! `#[validator(dynamic)]`, the catch-all handler of each role, which gets the messages no
//! named handler takes, with their name and raw arguments. Their rules and their code
//! generation live here, apart from the named handlers' (`check.rs`, `expand.rs`).
//!
//! A dynamic handler has no wire name and no generated client method: clients reach it by
//! name with the untyped calls (`signal_raw`, `query_raw`, `update_raw`, `h.signal(name, &arg)`).

use crate::ast::{Method, Workflow};
use crate::attr::{Role, RoleKind, Unfinished};
use crate::ctxt::Ctxt;
use crate::hygiene::local;
use crate::receiver::{async_ctx, sync_mut_self, sync_ref_self, CTX};
use crate::{spans, ty};
use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::Type;

/// One dynamic handler of each role, and one validator for the dynamic update.
pub(crate) fn one_per_role(cx: &Ctxt, wf: &Workflow) {
    for kind in [RoleKind::Signal, RoleKind::Query, RoleKind::Update] {
        let what = kind.name();
        let of_kind: Vec<&Method> = wf
            .dynamic_handlers()
            .filter(|m| m.role.kind() == kind)
            .collect();
        if let [first, rest @ ..] = of_kind.as_slice() {
            for extra in rest {
                cx.error_spanned_by(
                    extra.attr,
                    format!(
                        "a workflow has one `#[{what}(dynamic)]` handler, and `{}` is already it; \
                         handle every name there (match on its `name` parameter)",
                        first.ident()
                    ),
                );
            }
        }
    }
    let validators: Vec<&Method> = wf
        .methods
        .iter()
        .filter(|m| m.validates_dynamic())
        .collect();
    if let [first, rest @ ..] = validators.as_slice() {
        for extra in rest {
            cx.error_spanned_by(
                extra.attr,
                format!(
                    "the dynamic update already has a validator, `{}`; an update has one, so merge \
                     the checks",
                    first.ident()
                ),
            );
        }
    }
}

/// The shape of one dynamic handler or dynamic validator.
pub(crate) fn method(cx: &Ctxt, wf: &Workflow, m: &Method) {
    match &m.role {
        Role::Signal { .. } => {
            let what = "`#[signal(dynamic)]`";
            let receiver = if m.is_async() {
                async_ctx(cx, m, what)
            } else {
                sync_mut_self(cx, m, what)
            };
            if receiver && name_and_args(cx, m, "signal", false) {
                if let Some(output) = m.output.filter(|o| !ty::is_unit(o)) {
                    cx.error_spanned_by(
                        output,
                        "a signal returns nothing to its sender; remove the return type",
                    );
                }
            }
        }
        Role::Query { .. } => {
            let why = "queries read state and never wait";
            if sync_ref_self(cx, m, "`#[query(dynamic)]`", why) {
                name_and_args(cx, m, "query", false);
            }
        }
        Role::Update { .. } => {
            let what = "`#[update(dynamic)]`";
            let receiver = if m.is_async() {
                async_ctx(cx, m, what)
            } else {
                sync_mut_self(cx, m, what)
            };
            if receiver && name_and_args(cx, m, "update", false) && !returns_result(m) {
                cx.syn_error(syn::Error::new(
                    m.output_span(),
                    "an `#[update(dynamic)]` returns `Result<T, UpdateError>` (`Result<(), UpdateError>` for no value)",
                ));
            }
        }
        Role::Validator { update } => {
            if !wf
                .dynamic_handlers()
                .any(|u| u.role.kind() == RoleKind::Update)
            {
                cx.error_spanned_by(
                    update,
                    "`#[validator(dynamic)]` checks the `#[update(dynamic)]` handler, and this \
                     workflow has none; add one, or name the update this validator checks",
                );
                return;
            }
            let why = "it decides before anything is recorded";
            if sync_ref_self(cx, m, "`#[validator(dynamic)]`", why)
                && name_and_args(cx, m, "update", true)
                && !m.output.and_then(ty::result_ok).is_some_and(ty::is_unit)
            {
                cx.syn_error(syn::Error::new(
                    m.output_span(),
                    "a `#[validator(dynamic)]` returns `Result<(), Rejection>`",
                ));
            }
        }
        Role::Init | Role::Run | Role::Activity { .. } => {}
    }
}

/// The parameters after the receiver or context: the message's name and its raw arguments,
/// owned for a handler (`name: String, args: Payload`), borrowed for a validator.
fn name_and_args(cx: &Ctxt, m: &Method, what: &str, borrowed: bool) -> bool {
    let (name_ty, args_ty) = if borrowed {
        ("&str", "&Payload")
    } else {
        ("String", "Payload")
    };
    let first = match (&m.role, m.is_async()) {
        (Role::Validator { .. } | Role::Query { .. }, _) => "&self".to_string(),
        (_, true) => CTX.to_string(),
        (_, false) => "&mut self".to_string(),
    };
    let expected = format!(
        "`fn {}({first}, name: {name_ty}, args: {args_ty})`",
        m.ident()
    );
    if m.args.len() != 2 {
        cx.syn_error(syn::Error::new(
            m.params_span(),
            format!(
                "a dynamic {what} {} takes the {what}'s name and its raw arguments (decode them \
                 with `args.decode::<(A, B)>()`): {expected}",
                if borrowed { "validator" } else { "handler" }
            ),
        ));
        return false;
    }
    for (arg, (written, want)) in m.args.iter().zip([("name", name_ty), ("args", args_ty)]) {
        if !is(arg.ty, want) {
            cx.error_spanned_by(
                arg.ty,
                format!("this parameter is the {what}'s {written}: write `{want}` ({expected})"),
            );
            return false;
        }
    }
    true
}

/// Whether `ty` is the type written `want` (`String`, `Payload`, `&str`, `&Payload`), by its
/// last path segment so that `wf_sdk::payload::Payload` and `std::string::String` pass too.
pub(crate) fn is(ty: &Type, want: &str) -> bool {
    let (ty, want) = match (ty, want.strip_prefix('&')) {
        (Type::Reference(r), Some(inner)) if r.mutability.is_none() => (&*r.elem, inner),
        (_, Some(_)) | (Type::Reference(_), None) => return false,
        (ty, None) => (ty, want),
    };
    match ty {
        Type::Path(p) if p.qself.is_none() => p
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == want && s.arguments.is_none()),
        _ => false,
    }
}

fn returns_result(m: &Method) -> bool {
    m.output.and_then(ty::result_ok).is_some()
}

/// `fn dynamic_handlers()` of the `WorkflowDefinition` impl, or nothing when the workflow has
/// no dynamic handler (the trait's default has none).
pub(crate) fn definition_item(wf: &Workflow, p: &TokenStream) -> TokenStream {
    let find = |kind: RoleKind| wf.dynamic_handlers().find(|m| m.role.kind() == kind);
    let (signal, query, update) = (
        find(RoleKind::Signal),
        find(RoleKind::Query),
        find(RoleKind::Update),
    );
    if signal.is_none() && query.is_none() && update.is_none() {
        return TokenStream::new();
    }
    let validator = wf.methods.iter().find(|m| m.validates_dynamic());
    let option = |entry: Option<TokenStream>| match entry {
        Some(entry) => quote!(#p::Some(#entry)),
        None => quote!(#p::None),
    };
    let signal = option(signal.map(|m| signal_entry(m, p)));
    let query = option(query.map(|m| query_entry(m, p)));
    let update = option(update.map(|m| update_entry(m, validator, p)));
    quote! {
        fn dynamic_handlers() -> #p::DynamicHandlers<Self> {
            #p::DynamicHandlers {
                signal: #signal,
                query: #query,
                update: #update,
            }
        }
    }
}

fn unfinished(m: &Method, p: &TokenStream) -> TokenStream {
    match &m.role {
        Role::Signal {
            unfinished: Unfinished::Abandon,
            ..
        }
        | Role::Update {
            unfinished: Unfinished::Abandon,
            ..
        } => quote!(#p::Unfinished::Abandon),
        _ => quote!(#p::Unfinished::Warn),
    }
}

fn signal_entry(m: &Method, p: &TokenStream) -> TokenStream {
    let [ctx, state, name, args] = ["__ctx", "__state", "__name", "__args"].map(local);
    let ident = m.ident();
    let unfinished = unfinished(m, p);
    let kind = if m.is_async() {
        quote! {
            #p::DynamicSignalKind::Async(
                |#ctx: #p::WorkflowContext<Self>, #name: #p::String, #args: #p::Payload| -> #p::LocalBoxFuture<()> {
                    #p::Box::pin(async move {
                        let mut #ctx = #ctx;
                        Self::#ident(&mut #ctx, #name, #args).await;
                    })
                },
            )
        }
    } else {
        quote! {
            #p::DynamicSignalKind::Sync(|#state: &mut Self, #name: #p::String, #args: #p::Payload| {
                Self::#ident(#state, #name, #args);
            })
        }
    };
    quote!(#p::DynamicSignal { kind: #kind, unfinished: #unfinished })
}

fn query_entry(m: &Method, p: &TokenStream) -> TokenStream {
    let [state, name, args] = ["__state", "__name", "__args"].map(local);
    let ident = m.ident();
    let output = m
        .output
        .map_or_else(|| quote!(()), ToTokens::to_token_stream);
    quote! {
        |#state: &Self, #name: #p::String, #args: #p::Payload| -> #p::Result<#p::Payload, #p::PayloadError> {
            #p::Payload::encode::<#output>(&Self::#ident(#state, #name, #args))
        }
    }
}

fn update_entry(m: &Method, validator: Option<&Method>, p: &TokenStream) -> TokenStream {
    let [ctx, state, name, args, result] =
        ["__ctx", "__state", "__name", "__args", "__result"].map(local);
    let ident = m.ident();
    let output = m.output.expect("checked: an update returns Result<T, _>");
    let value = ty::result_ok(output).expect("checked: an update returns Result<T, _>");
    let call = if m.is_async() {
        quote!(Self::#ident(&mut #ctx, #name, #args).await)
    } else {
        quote!(Self::#ident(#state, #name, #args))
    };
    // Another error type than `UpdateError` is reported on the return type.
    let call = spans::over(call, output);
    let encoded = quote! {
        let #result: #p::Result<#value, #p::UpdateError> = #call;
        #p::encode_update_result::<#value>(#result)
    };
    let kind = if m.is_async() {
        quote! {
            #p::DynamicUpdateKind::Async(
                |#ctx: #p::WorkflowContext<Self>, #name: #p::String, #args: #p::Payload|
                    -> #p::LocalBoxFuture<#p::Result<#p::Payload, #p::UpdateError>>
                {
                    #p::Box::pin(async move {
                        let mut #ctx = #ctx;
                        #encoded
                    })
                },
            )
        }
    } else {
        quote! {
            #p::DynamicUpdateKind::Sync(
                |#state: &mut Self, #name: #p::String, #args: #p::Payload|
                    -> #p::Result<#p::Payload, #p::UpdateError>
                {
                    #encoded
                },
            )
        }
    };
    let validator = match validator {
        Some(v) => {
            let v_ident = v.ident();
            let output = v
                .output
                .expect("checked: a validator returns Result<(), _>");
            let call = spans::over(quote!(Self::#v_ident(#state, #name, #args)), output);
            quote! {
                #p::Some(|#state: &Self, #name: &str, #args: &#p::Payload| -> #p::Result<(), #p::Rejection> {
                    #call
                })
            }
        }
        None => quote!(#p::None),
    };
    let unfinished = unfinished(m, p);
    quote! {
        #p::DynamicUpdate {
            kind: #kind,
            validator: #validator,
            unfinished: #unfinished,
        }
    }
}
