//! The rules: what shape each role allows, and the rules across methods (one `#[run]`, a
//! validator names an existing update, no duplicate wire names).
//!
//! Each method's shape is checked up to its first mistake, so one mistake gives one error
//! (an async run with `self` is not also reported as missing its `ctx`). Every message says
//! how to fix the code.

use crate::ast::{Activities, Method, Workflow};
use crate::attr::{Role, RoleKind};
use crate::ctxt::Ctxt;
use crate::receiver::{
    async_ctx, init_output, init_plain, run_async_ctx, run_output, sync_mut_self, sync_ref_self,
    CTX,
};
use crate::ty::{self, Borrow};
use quote::ToTokens;
use std::collections::BTreeMap;
use syn::{ItemImpl, Type};

/// Checks a `#[workflow]` impl block.
pub(crate) fn workflow(cx: &Ctxt, wf: &Workflow) {
    container(cx, wf.item, wf.ident.is_some(), "workflow", "a workflow");
    let runs: Vec<_> = wf.with_role(RoleKind::Run).collect();
    match runs.as_slice() {
        [] => cx.error_spanned_by(
            wf.self_ty,
            format!(
                "this workflow has no `#[run]` method; add its main method: \
                 `#[run] async fn run({CTX}, input: Input) -> Result<Output, WorkflowError>`"
            ),
        ),
        [first, rest @ ..] => {
            for extra in rest {
                cx.error_spanned_by(
                    extra.attr,
                    format!(
                        "a workflow has one `#[run]` method, and `{}` is already it",
                        first.ident()
                    ),
                );
            }
        }
    }
    let inits: Vec<_> = wf.with_role(RoleKind::Init).collect();
    if let [first, rest @ ..] = inits.as_slice() {
        for extra in rest {
            cx.error_spanned_by(
                extra.attr,
                format!(
                    "a workflow has one `#[init]` method, and `{}` is already it",
                    first.ident()
                ),
            );
        }
    }
    for method in &wf.methods {
        if method.role.is_dynamic() || method.validates_dynamic() {
            if no_generics(cx, method) {
                crate::dynamic::method(cx, wf, method);
            }
            continue;
        }
        if no_generics(cx, method) {
            match &method.role {
                Role::Run if wf.dynamic => crate::dynamic_workflow::run(cx, method),
                Role::Init if wf.dynamic => crate::dynamic_workflow::init(cx, method, wf.ident),
                Role::Run => run(cx, method),
                Role::Init => init(cx, method, wf.run(), wf.ident),
                Role::Signal { .. } => signal(cx, method),
                Role::Query { .. } => query(cx, method),
                Role::Update { .. } => update(cx, method),
                Role::Validator { .. } => validator(cx, wf, method),
                Role::Activity { .. } => unreachable!("rejected while building the workflow view"),
            }
        }
    }
    crate::dynamic::one_per_role(cx, wf);
    unique_wire_names(cx, wf.handlers(), "each signal, query and update");
    client_names_free(cx, wf);
}

/// The methods of `WorkflowHandle` a handler may not be named like: a client method with one
/// of these names would never be called (`h.cancel()` resolves to the handle's own inherent
/// `cancel`, silently) or be ambiguous at every call (`clone`, from `Clone`, a trait always in
/// scope). The inherent ones are the `pub fn`s of wf-core's `impl<W> WorkflowHandle<W>` blocks,
/// plus `export`, `run_id` and `update_handle`, which are being added there; the test
/// `wf-sdk/tests/messages_handle_methods.rs` reads this list and fails when the two drift apart. Names
/// starting with `__` are refused as well (see `client_names_free`).
const HANDLE_METHODS: &[&str] = &[
    "cancel",
    "client",
    "clone",
    "clone_from",
    "describe",
    "export",
    "history",
    "result",
    "run_id",
    "signal",
    "signal_with_start",
    "start_outcome",
    "stream",
    "streams",
    "terminate",
    "update_handle",
    "update_with_start",
    "workflow_id",
];

fn client_names_free(cx: &Ctxt, wf: &Workflow) {
    for m in wf.handlers() {
        let ident = m.ident().to_string();
        if HANDLE_METHODS.contains(&ident.as_str()) || ident.starts_with("__") {
            let role = m.role.kind().name();
            cx.error_spanned_by(
                m.ident(),
                format!(
                    "`{ident}` is already a method of `WorkflowHandle`, so the generated client method \
                     would never be called; rename this method (the wire name can stay: \
                     `#[{role}(name = \"{}\")]`)",
                    m.wire_name()
                ),
            );
        }
    }
}

/// Checks an `#[activities]` impl block.
pub(crate) fn activities(cx: &Ctxt, group: &Activities) {
    container(
        cx,
        group.item,
        group.ident.is_some(),
        "activities",
        "an activity group",
    );
    for method in &group.activities {
        if no_generics(cx, method) {
            activity(cx, method);
        }
    }
    unique_wire_names(cx, group.activities.iter(), "each activity");
}

/// `#[workflow]`/`#[activities]` go on a plain inherent impl of a concrete, named type.
fn container(cx: &Ctxt, item: &ItemImpl, named: bool, attr: &str, what: &str) {
    if let Some((_, path, _)) = &item.trait_ {
        let ty = item.self_ty.to_token_stream();
        cx.error_spanned_by(
            path,
            format!("`#[{attr}]` goes on the type's own impl block (`impl {ty} {{ .. }}`), not on a trait impl"),
        );
        return;
    }
    let generics = &item.generics;
    if !generics.params.is_empty() || generics.where_clause.is_some() {
        cx.error_spanned_by(
            generics,
            format!("`#[{attr}]` does not support generic impl blocks: {what} needs one concrete type for its wire names and payloads"),
        );
        return;
    }
    if !named {
        cx.error_spanned_by(
            &item.self_ty,
            format!("`#[{attr}]` needs a plain, non-generic type name here, like `impl AgentRun {{ .. }}`"),
        );
    }
}

fn no_generics(cx: &Ctxt, m: &Method) -> bool {
    let generics = &m.sig.generics;
    if generics.params.is_empty() && generics.where_clause.is_none() {
        return true;
    }
    cx.error_spanned_by(
        generics,
        format!(
            "a `#[{}]` method cannot be generic: its arguments are decoded from the wire into concrete types",
            m.role.kind().name()
        ),
    );
    false
}

/// Shared by all roles: what crosses the wire is decoded into owned, concrete values.
pub(crate) fn wire_args(cx: &Ctxt, m: &Method) {
    for arg in &m.args {
        if ty::context_borrow(arg.ty, "WorkflowContext").is_some()
            || ty::context_borrow(arg.ty, "ActivityContext").is_some()
        {
            cx.error_spanned_by(
                arg.ty,
                "the context must be the first parameter (after `&self`, for activities)",
            );
        } else if let Type::Reference(r) = arg.ty {
            let owned = r.elem.to_token_stream();
            cx.error_spanned_by(
                arg.ty,
                format!(
                    "arguments are decoded from the wire into owned values: take `{}` instead of a reference",
                    if owned.to_string() == "str" { "String".into() } else { owned.to_string() }
                ),
            );
        } else if let Type::ImplTrait(_) = arg.ty {
            cx.error_spanned_by(arg.ty, "arguments are decoded from the wire into a concrete type; `impl Trait` cannot be decoded");
        }
    }
}

fn run(cx: &Ctxt, m: &Method) {
    if !run_async_ctx(cx, m) {
        return;
    }
    if let Some(extra) = m.args.get(1) {
        cx.error_spanned_by(
            extra.pat,
            "`#[run]` takes one input after `ctx`; put several values in one struct",
        );
        return;
    }
    wire_args(cx, m);
    run_output(cx, m);
}

fn init(cx: &Ctxt, m: &Method, run: Option<&Method>, self_name: Option<&syn::Ident>) {
    if !init_plain(cx, m) {
        return;
    }
    let run_input = run.and_then(|r| r.args.first());
    let expected = match run_input {
        Some(arg) => format!("&{}", arg.ty.to_token_stream()),
        None => "&Input".into(),
    };
    if let Some(ctx) = &m.ctx {
        cx.error_spanned_by(
            ctx.node,
            format!("`#[init]` takes no context, only the run's input as `{expected}`"),
        );
        return;
    }
    if let Some(extra) = m.args.get(1) {
        cx.error_spanned_by(
            extra.pat,
            format!("`#[init]` takes at most one parameter, the run's input as `{expected}`"),
        );
        return;
    }
    if let Some(arg) = m.args.first() {
        if run.is_some() && run_input.is_none() {
            cx.error_spanned_by(
                arg.ty,
                "`#[init]` takes the run's input, but `#[run]` has none; remove this parameter",
            );
            return;
        }
        if ty::referent(arg.ty).is_none() {
            cx.error_spanned_by(
                arg.ty,
                format!("`#[init]` borrows the run's input: write `{expected}`"),
            );
            return;
        }
    }
    init_output(cx, m, self_name);
}

fn signal(cx: &Ctxt, m: &Method) {
    let ok = if m.is_async() {
        async_ctx(cx, m, "`#[signal]`")
    } else {
        sync_mut_self(cx, m, "`#[signal]`")
    };
    if !ok {
        return;
    }
    wire_args(cx, m);
    if let Some(output) = m.output {
        if !ty::is_unit(output) {
            cx.error_spanned_by(
                output,
                "a signal returns nothing to its sender; remove the return type, or make it an `#[update]` to return a value",
            );
        }
    }
}

fn query(cx: &Ctxt, m: &Method) {
    if !sync_ref_self(cx, m, "`#[query]`", "queries read state and never wait") {
        return;
    }
    wire_args(cx, m);
}

fn update(cx: &Ctxt, m: &Method) {
    let ok = if m.is_async() {
        async_ctx(cx, m, "`#[update]`")
    } else {
        sync_mut_self(cx, m, "`#[update]`")
    };
    if !ok {
        return;
    }
    wire_args(cx, m);
    match m.output {
        Some(output) if ty::result_ok(output).is_some() => {}
        _ => cx.syn_error(syn::Error::new(
            m.output_span(),
            "an `#[update]` returns `Result<T, UpdateError>` (`Result<(), UpdateError>` for no value)",
        )),
    }
}

fn validator(cx: &Ctxt, wf: &Workflow, m: &Method) {
    let Role::Validator { update: target } = &m.role else {
        return;
    };
    let shape_ok = sync_ref_self(
        cx,
        m,
        "`#[validator]`",
        "it decides before anything is recorded",
    );
    let target_method = wf
        .methods
        .iter()
        .find(|other| other.ident() == target && other.is_handler());
    let update = match target_method {
        Some(u) if u.role.kind() == RoleKind::Update => u,
        Some(other) => {
            cx.error_spanned_by(
                target,
                format!(
                    "`{target}` is a `#[{}]`; only `#[update]` methods have validators",
                    other.role.kind().name()
                ),
            );
            return;
        }
        None => {
            let updates: Vec<String> = wf
                .with_role(RoleKind::Update)
                .map(|u| format!("`{}`", u.ident()))
                .collect();
            let known = if updates.is_empty() {
                "this workflow has no updates".to_string()
            } else {
                format!("its updates: {}", updates.join(", "))
            };
            cx.error_spanned_by(
                target,
                format!("no `#[update]` named `{target}` in this workflow; {known}"),
            );
            return;
        }
    };
    if let Some(first) = wf.validators_of(target).next() {
        if first.ident() != m.ident() {
            cx.error_spanned_by(
                target,
                format!("`{target}` already has a validator, `{}`; an update has one, so merge the checks", first.ident()),
            );
            return;
        }
    }
    if !shape_ok {
        return;
    }
    let expected = || {
        let params: Vec<String> = update
            .args
            .iter()
            .map(|a| format!("{}: &{}", a.pat.to_token_stream(), a.ty.to_token_stream()))
            .collect();
        let mut sig = String::from("&self");
        for p in params {
            sig.push_str(", ");
            sig.push_str(&p);
        }
        format!("fn {}({sig})", m.ident())
    };
    if m.args.len() != update.args.len() {
        cx.syn_error(syn::Error::new(
            m.params_span(),
            format!(
                "a validator takes `&self` and a reference to each argument of `{target}`: `{}`",
                expected()
            ),
        ));
        return;
    }
    for (arg, update_arg) in m.args.iter().zip(&update.args) {
        if ty::referent(arg.ty).is_none() {
            cx.error_spanned_by(
                arg.ty,
                format!(
                    "validator arguments are borrowed from the update's: write `&{}`",
                    update_arg.ty.to_token_stream()
                ),
            );
            return;
        }
    }
    let returns_unit_result = m.output.and_then(ty::result_ok).is_some_and(ty::is_unit);
    if !returns_unit_result {
        cx.syn_error(syn::Error::new(
            m.output_span(),
            "a `#[validator]` returns `Result<(), Rejection>`",
        ));
    }
}

fn activity(cx: &Ctxt, m: &Method) {
    if m.sig.asyncness.is_none() {
        let (fn_token, ident) = (&m.sig.fn_token, &m.sig.ident);
        cx.error_spanned_by(
            quote::quote!(#fn_token #ident),
            "an `#[activity]` must be an `async fn`",
        );
        return;
    }
    match &m.receiver {
        Some(r) if r.borrow == Borrow::Ref => {}
        Some(r) => {
            cx.error_spanned_by(
                r.node,
                "an `#[activity]` takes `&self`: activities run concurrently and share their group",
            );
            return;
        }
        None => {
            cx.syn_error(syn::Error::new(
                m.params_span(),
                "an `#[activity]` takes `&self` first: its group carries the activity's dependencies",
            ));
            return;
        }
    }
    match &m.ctx {
        None => {
            let span = m
                .args
                .first()
                .map_or(m.params_span(), |a| syn::spanned::Spanned::span(a.pat));
            cx.syn_error(syn::Error::new(
                span,
                "an `#[activity]` takes `ctx: ActivityContext` after `&self`",
            ));
            return;
        }
        Some(ctx) if ctx.borrow != Borrow::Owned => {
            cx.error_spanned_by(
                &ctx.node.ty,
                "an activity owns its context: take `ctx: ActivityContext` by value",
            );
            return;
        }
        Some(_) => {}
    }
    wire_args(cx, m);
    if let Some(extra) = m.args.get(MAX_ACTIVITY_ARGS) {
        cx.syn_error(syn::Error::new(
            syn::spanned::Spanned::span(extra.pat),
            format!(
                "an `#[activity]` takes at most {MAX_ACTIVITY_ARGS} arguments after `ctx`; \
                 pass one struct instead"
            ),
        ));
    }
    match m.output {
        Some(output) if ty::result_ok(output).is_some() => {}
        _ => cx.syn_error(syn::Error::new(
            m.output_span(),
            "an `#[activity]` returns `Result<T, ActivityError>`",
        )),
    }
}

/// The most arguments an activity takes after its context: `wf_core::ActivityFn` (how a
/// workflow calls an activity by its method) is implemented up to this many.
const MAX_ACTIVITY_ARGS: usize = 5;

fn unique_wire_names<'m, 'a: 'm>(
    cx: &Ctxt,
    methods: impl Iterator<Item = &'m Method<'a>>,
    what: &str,
) {
    let mut seen: BTreeMap<String, &Method> = BTreeMap::new();
    for m in methods {
        let name = m.wire_name();
        if let Some(first) = seen.get(&name) {
            cx.syn_error(syn::Error::new(
                m.wire_name_span(),
                format!(
                    "wire name `{name}` is already used by `{}`; {what} needs its own (rename one with `name = \"..\"`)",
                    first.ident()
                ),
            ));
        } else {
            seen.insert(name, m);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::WorkflowArgs;
    use syn::parse_quote;

    /// The errors reported for a workflow impl, one string per error.
    fn errors(item: ItemImpl) -> Vec<String> {
        let cx = Ctxt::new();
        let wf = Workflow::from_syn(&cx, &item, WorkflowArgs::default());
        workflow(&cx, &wf);
        let mut out = Vec::new();
        if let Err(tokens) = cx.check() {
            // Each error is `::core::compile_error! { "msg" }`.
            let text = tokens.to_string();
            for part in text.split("compile_error !").skip(1) {
                let start = part.find('"').unwrap() + 1;
                let end = part.rfind('"').unwrap();
                out.push(part[start..end].replace("\\\"", "\"").replace("\\\\", "\\"));
            }
        }
        out
    }

    fn one_error(item: ItemImpl, needle: &str) {
        let errors = errors(item);
        assert_eq!(
            errors.len(),
            1,
            "expected one error containing {needle:?}, got {errors:#?}"
        );
        assert!(
            errors[0].contains(needle),
            "expected {needle:?} in {:?}",
            errors[0]
        );
    }

    #[test]
    fn a_complete_workflow_passes() {
        let errors = errors(parse_quote! {
            impl AgentRun {
                #[init] fn new(input: &AgentInput) -> Self { todo!() }
                #[run] async fn run(ctx: &mut WorkflowContext<Self>, input: AgentInput) -> Result<String, WorkflowError> { todo!() }
                #[signal] fn pause(&mut self) {}
                #[signal] async fn note(ctx: &WorkflowContext<Self>, text: String) {}
                #[query] fn status(&self, verbose: bool) -> u32 { 0 }
                #[update] fn add(&mut self, item: u32) -> Result<u32, UpdateError> { todo!() }
                #[update] async fn change_goal(ctx: &mut WorkflowContext<Self>, goal: String) -> Result<String, UpdateError> { todo!() }
                #[validator(change_goal)] fn validate_goal(&self, goal: &String) -> Result<(), Rejection> { Ok(()) }
            }
        });
        assert!(errors.is_empty(), "{errors:#?}");
    }

    #[test]
    fn run_rules() {
        one_error(
            parse_quote!(impl W { fn helper(&self) {} }),
            "this workflow has no `#[run]` method",
        );
        one_error(
            parse_quote!(impl W {
                #[run] async fn a(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> { Ok(()) }
                #[run] async fn b(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> { Ok(()) }
            }),
            "a workflow has one `#[run]` method, and `a` is already it",
        );
        one_error(
            parse_quote!(impl W { #[run] fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> { Ok(()) } }),
            "`#[run]` must be an `async fn`",
        );
        one_error(
            parse_quote!(impl W { #[run] async fn run(&mut self, input: u32) -> Result<(), WorkflowError> { Ok(()) } }),
            "an async `#[run]` takes no `self`",
        );
        one_error(
            parse_quote!(impl W { #[run] async fn run(input: u32) -> Result<(), WorkflowError> { Ok(()) } }),
            "takes the workflow context first",
        );
        one_error(
            parse_quote!(impl W { #[run] async fn run(ctx: &mut WorkflowContext<Self>, a: u32, b: u32) -> Result<(), WorkflowError> { Ok(()) } }),
            "`#[run]` takes one input after `ctx`",
        );
        one_error(
            parse_quote!(impl W { #[run] async fn run(ctx: &mut WorkflowContext<Self>) -> String { todo!() } }),
            "`#[run]` returns `Result<Output, WorkflowError>`",
        );
    }

    const RUN: &str = "#[run] async fn run(ctx: &mut WorkflowContext<Self>, input: Input) -> Result<(), WorkflowError> { Ok(()) }";

    fn with_run(methods: &str) -> ItemImpl {
        syn::parse_str(&format!("impl W {{ {RUN} {methods} }}")).unwrap()
    }

    #[test]
    fn init_rules() {
        one_error(
            with_run("#[init] async fn new(i: &Input) -> Self { todo!() }"),
            "`#[init]` must be a plain `fn`",
        );
        one_error(
            with_run("#[init] fn new(i: Input) -> Self { todo!() }"),
            "`#[init]` borrows the run's input: write `&Input`",
        );
        one_error(
            with_run("#[init] fn new(i: &Input) -> u32 { 0 }"),
            "`#[init]` returns `Self`",
        );
        one_error(
            with_run("#[init] fn new(i: &Input) { }"),
            "`#[init]` returns `Self`",
        );
        assert!(errors(with_run("#[init] fn new() -> W { todo!() }")).is_empty());
    }

    #[test]
    fn signal_rules() {
        one_error(
            with_run("#[signal] fn pause(&self) {}"),
            "a sync `#[signal]` changes state: take `&mut self`, not `&self`",
        );
        one_error(
            with_run("#[signal] fn pause() {}"),
            "a sync `#[signal]` takes `&mut self` first",
        );
        one_error(
            with_run("#[signal] async fn note(&mut self, t: String) {}"),
            "an async `#[signal]` takes no `self`",
        );
        one_error(
            with_run("#[signal] fn pause(&mut self) -> bool { true }"),
            "a signal returns nothing to its sender",
        );
        one_error(
            with_run("#[signal] fn note(&mut self, t: &str) {}"),
            "take `String` instead of a reference",
        );
    }

    #[test]
    fn query_rules() {
        one_error(
            with_run("#[query] async fn status(&self) -> u32 { 0 }"),
            "remove `async`",
        );
        one_error(
            with_run("#[query] fn status(&mut self) -> u32 { 0 }"),
            "take `&self`, not `&mut self`",
        );
        one_error(
            with_run("#[query] fn status(self) -> u32 { 0 }"),
            "take `&self`, not `self`",
        );
    }

    #[test]
    fn update_rules() {
        one_error(
            with_run("#[update] fn add(&self, x: u32) -> Result<u32, UpdateError> { todo!() }"),
            "take `&mut self`",
        );
        one_error(
            with_run("#[update] fn add(&mut self, x: u32) -> u32 { x }"),
            "returns `Result<T, UpdateError>`",
        );
    }

    const UPDATE: &str =
        "#[update] fn add(&mut self, x: u32, y: String) -> Result<u32, UpdateError> { todo!() }";

    #[test]
    fn validator_rules() {
        let v = |s: &str| with_run(&format!("{UPDATE} {s}"));
        assert!(errors(v("#[validator(add)] fn check(&self, x: &u32, y: &String) -> Result<(), Rejection> { Ok(()) }")).is_empty());
        one_error(v("#[validator(add)] async fn check(&self, x: &u32, y: &String) -> Result<(), Rejection> { Ok(()) }"), "remove `async`");
        one_error(v("#[validator(add)] fn check(&mut self, x: &u32, y: &String) -> Result<(), Rejection> { Ok(()) }"), "take `&self`");
        one_error(v("#[validator(ad)] fn check(&self, x: &u32, y: &String) -> Result<(), Rejection> { Ok(()) }"), "no `#[update]` named `ad` in this workflow; its updates: `add`");
        one_error(
            v("#[validator(add)] fn check(&self, x: &u32, y: &String) -> Result<(), Rejection> { Ok(()) }
               #[validator(add)] fn check2(&self, x: &u32, y: &String) -> Result<(), Rejection> { Ok(()) }"),
            "`add` already has a validator, `check`",
        );
        one_error(
            v("#[validator(add)] fn check(&self, x: &u32) -> Result<(), Rejection> { Ok(()) }"),
            "`fn check(&self, x: &u32, y: &String)`",
        );
        one_error(v("#[validator(add)] fn check(&self, x: u32, y: &String) -> Result<(), Rejection> { Ok(()) }"), "write `&u32`");
        one_error(
            v("#[validator(add)] fn check(&self, x: &u32, y: &String) -> bool { true }"),
            "returns `Result<(), Rejection>`",
        );
        one_error(
            with_run("#[signal] fn s(&mut self) {} #[validator(s)] fn check(&self) -> Result<(), Rejection> { Ok(()) }"),
            "`s` is a `#[signal]`; only `#[update]` methods have validators",
        );
    }

    #[test]
    fn duplicate_wire_names() {
        one_error(
            with_run(
                "#[signal] fn a(&mut self) {} #[query(name = \"a\")] fn b(&self) -> u32 { 0 }",
            ),
            "wire name `a` is already used by `a`",
        );
    }

    #[test]
    fn handle_method_names_are_refused() {
        one_error(
            with_run("#[signal] fn cancel(&mut self) {}"),
            "`cancel` is already a method of `WorkflowHandle`",
        );
        assert!(errors(with_run(
            "#[signal(name = \"cancel\")] fn stop(&mut self) {}"
        ))
        .is_empty());
    }

    #[test]
    fn container_rules() {
        one_error(
            parse_quote!(impl Default for W { #[run] async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> { Ok(()) } }),
            "not on a trait impl",
        );
        one_error(
            parse_quote!(
                impl<T> W<T> {
                    #[run]
                    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> {
                        Ok(())
                    }
                }
            ),
            "does not support generic impl blocks",
        );
        one_error(
            with_run("#[signal] fn s<T>(&mut self, t: T) {}"),
            "cannot be generic",
        );
    }

    fn activity_errors(item: ItemImpl) -> String {
        let cx = Ctxt::new();
        let group = Activities::from_syn(&cx, &item, Default::default());
        activities(&cx, &group);
        cx.check().err().map(|e| e.to_string()).unwrap_or_default()
    }

    #[test]
    fn activity_rules() {
        assert_eq!(
            activity_errors(parse_quote!(impl T {
                #[activity] async fn a(&self, ctx: ActivityContext) -> Result<(), ActivityError> { Ok(()) }
                #[activity(name = "bee")] async fn b(&self, ctx: ActivityContext, x: u32, y: u32) -> Result<u32, ActivityError> { Ok(x) }
            })),
            ""
        );
        let e = activity_errors(
            parse_quote!(impl T { #[activity] fn a(&self, ctx: ActivityContext) -> Result<(), ActivityError> { Ok(()) } }),
        );
        assert!(e.contains("must be an `async fn`"), "{e}");
        let e = activity_errors(
            parse_quote!(impl T { #[activity] async fn a(ctx: ActivityContext) -> Result<(), ActivityError> { Ok(()) } }),
        );
        assert!(e.contains("takes `&self` first"), "{e}");
        let e = activity_errors(
            parse_quote!(impl T { #[activity] async fn a(&self, x: u32) -> Result<(), ActivityError> { Ok(()) } }),
        );
        assert!(
            e.contains("takes `ctx: ActivityContext` after `&self`"),
            "{e}"
        );
        let e = activity_errors(
            parse_quote!(impl T { #[signal] async fn a(&self, ctx: ActivityContext) -> Result<(), ActivityError> { Ok(()) } }),
        );
        assert!(e.contains("belongs in a `#[workflow]` impl block"), "{e}");
    }
}
