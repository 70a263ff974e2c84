//! Typed views of the annotated impl blocks. They borrow the original `syn` nodes so every
//! diagnostic and every generated token can point at what the user wrote.
//!
//! Building a view only classifies: it finds the role attributes, parses their arguments
//! (`attr.rs`) and splits each signature into receiver, context, arguments and output. Whether
//! that shape is allowed for the role is `check.rs`'s business.

use crate::attr::{self, ActivitiesArgs, CratePath, Role, RoleKind, WorkflowArgs};
use crate::ctxt::Ctxt;
use crate::ty::{self, Borrow};
use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, Ident, ImplItem, ImplItemFn, ItemImpl, Pat, PatType, Signature, Type};

/// `#[workflow] impl T { .. }`.
pub(crate) struct Workflow<'a> {
    pub item: &'a ItemImpl,
    pub self_ty: &'a Type,
    /// The type's name, if `self_ty` is a plain name (`check` reports it otherwise).
    pub ident: Option<&'a Ident>,
    /// Wire name of the workflow type.
    pub name: String,
    /// Where the generated code finds wf (`crate = ".."`).
    pub krate: CratePath,
    /// The methods that carry a role attribute, in source order.
    pub methods: Vec<Method<'a>>,
    /// `#[workflow(dynamic)]`: runs every workflow type no other registration names.
    pub dynamic: bool,
}

/// `#[activities] impl T { .. }`.
pub(crate) struct Activities<'a> {
    pub item: &'a ItemImpl,
    pub self_ty: &'a Type,
    pub ident: Option<&'a Ident>,
    /// Where the generated code finds wf (`crate = ".."`).
    pub krate: CratePath,
    /// The `#[activity]` methods, in source order.
    pub activities: Vec<Method<'a>>,
}

/// A method with a role: a handler, the run, the init, a validator or an activity.
pub(crate) struct Method<'a> {
    pub role: Role,
    /// The role attribute, for diagnostics about the role itself.
    pub attr: &'a Attribute,
    pub func: &'a ImplItemFn,
    pub sig: &'a Signature,
    pub receiver: Option<Receiver<'a>>,
    /// The first parameter after the receiver, if it is the context type.
    pub ctx: Option<Context<'a>>,
    /// The remaining parameters: what travels on the wire.
    pub args: Vec<Arg<'a>>,
    /// The written return type; `None` for `()` by omission.
    pub output: Option<&'a Type>,
}

pub(crate) struct Receiver<'a> {
    pub borrow: Borrow,
    pub node: &'a syn::Receiver,
}

pub(crate) struct Context<'a> {
    pub borrow: Borrow,
    pub node: &'a PatType,
}

pub(crate) struct Arg<'a> {
    pub pat: &'a Pat,
    pub ty: &'a Type,
}

impl<'a> Workflow<'a> {
    pub(crate) fn from_syn(cx: &Ctxt, item: &'a ItemImpl, args: WorkflowArgs) -> Self {
        let ident = type_name(&item.self_ty);
        let name = match (&args.name, ident) {
            (Some(lit), _) => lit.value(),
            (None, Some(ident)) => ident.to_string(),
            (None, None) => String::new(),
        };
        let allowed = [
            RoleKind::Init,
            RoleKind::Run,
            RoleKind::Signal,
            RoleKind::Query,
            RoleKind::Update,
            RoleKind::Validator,
        ];
        let methods = methods(cx, item, &allowed, "WorkflowContext", &args.krate);
        Workflow {
            item,
            self_ty: &item.self_ty,
            ident,
            name,
            krate: args.krate,
            methods,
            dynamic: args.dynamic,
        }
    }

    /// Methods with the given role kind.
    pub(crate) fn with_role(&self, kind: RoleKind) -> impl Iterator<Item = &Method<'a>> {
        self.methods.iter().filter(move |m| m.role.kind() == kind)
    }

    /// The `#[run]` method (the first, if there are several).
    pub(crate) fn run(&self) -> Option<&Method<'a>> {
        self.with_role(RoleKind::Run).next()
    }

    /// The `#[init]` method (the first, if there are several).
    pub(crate) fn init(&self) -> Option<&Method<'a>> {
        self.with_role(RoleKind::Init).next()
    }

    /// Signals, queries and updates: the methods with a wire name and a client method (the
    /// dynamic handlers have neither: see [`dynamic_handlers`](Self::dynamic_handlers)).
    pub(crate) fn handlers(&self) -> impl Iterator<Item = &Method<'a>> {
        self.methods
            .iter()
            .filter(|m| m.is_handler() && !m.role.is_dynamic())
    }

    /// `#[signal(dynamic)]`, `#[query(dynamic)]` and `#[update(dynamic)]` methods.
    pub(crate) fn dynamic_handlers(&self) -> impl Iterator<Item = &Method<'a>> {
        self.methods.iter().filter(|m| m.role.is_dynamic())
    }

    /// The validators of the update named `update` (Rust name). `#[validator(dynamic)]` is
    /// the dynamic update's, whatever the methods are named.
    pub(crate) fn validators_of<'s>(
        &'s self,
        update: &'s Ident,
    ) -> impl Iterator<Item = &'s Method<'a>> + 's {
        self.methods.iter().filter(move |m| {
            matches!(&m.role, Role::Validator { update: target } if target == update && !m.validates_dynamic())
        })
    }
}

impl<'a> Activities<'a> {
    pub(crate) fn from_syn(cx: &Ctxt, item: &'a ItemImpl, args: ActivitiesArgs) -> Self {
        let activities = methods(
            cx,
            item,
            &[RoleKind::Activity],
            "ActivityContext",
            &args.krate,
        );
        Activities {
            item,
            self_ty: &item.self_ty,
            ident: type_name(&item.self_ty),
            krate: args.krate,
            activities,
        }
    }
}

impl<'a> Method<'a> {
    fn from_fn(role: Role, attr: &'a Attribute, func: &'a ImplItemFn, context_type: &str) -> Self {
        let sig = &func.sig;
        let mut receiver = None;
        let mut ctx = None;
        let mut args = Vec::new();
        for input in &sig.inputs {
            match input {
                FnArg::Receiver(node) => {
                    let borrow = match &*node.ty {
                        Type::Reference(r) if r.mutability.is_some() => Borrow::Mut,
                        Type::Reference(_) => Borrow::Ref,
                        _ => Borrow::Owned,
                    };
                    receiver = Some(Receiver { borrow, node });
                }
                FnArg::Typed(node) => {
                    let first = ctx.is_none() && args.is_empty();
                    match ty::context_borrow(&node.ty, context_type) {
                        Some(borrow) if first => ctx = Some(Context { borrow, node }),
                        _ => args.push(Arg {
                            pat: &node.pat,
                            ty: &node.ty,
                        }),
                    }
                }
            }
        }
        let output = match &sig.output {
            syn::ReturnType::Default => None,
            syn::ReturnType::Type(_, ty) => Some(&**ty),
        };
        Method {
            role,
            attr,
            func,
            sig,
            receiver,
            ctx,
            args,
            output,
        }
    }

    pub(crate) fn ident(&self) -> &'a Ident {
        &self.sig.ident
    }

    pub(crate) fn is_async(&self) -> bool {
        self.sig.asyncness.is_some()
    }

    /// `#[validator(dynamic)]`: checks the `#[update(dynamic)]` handler.
    pub(crate) fn validates_dynamic(&self) -> bool {
        matches!(&self.role, Role::Validator { update } if update == crate::attr::DYNAMIC)
    }

    pub(crate) fn is_handler(&self) -> bool {
        matches!(
            self.role.kind(),
            RoleKind::Signal | RoleKind::Query | RoleKind::Update
        )
    }

    /// The wire name: `name = ".."`, else the method's name.
    pub(crate) fn wire_name(&self) -> String {
        match self.role.wire_name() {
            Some(lit) => lit.value(),
            None => self.ident().to_string(),
        }
    }

    /// Where the wire name is written: the `name = ".."` literal, else the method's name.
    pub(crate) fn wire_name_span(&self) -> Span {
        match self.role.wire_name() {
            Some(lit) => lit.span(),
            None => self.ident().span(),
        }
    }

    /// The user's doc comments, to copy onto generated client methods.
    pub(crate) fn docs(&self) -> impl Iterator<Item = &'a Attribute> {
        self.func.attrs.iter().filter(|a| a.path().is_ident("doc"))
    }

    /// The method's `#[cfg(..)]` attributes, to put on everything generated for it: a method
    /// compiled out takes its table entry, client method and registration with it.
    pub(crate) fn cfgs(&self) -> impl Iterator<Item = &'a Attribute> + Clone {
        self.func.attrs.iter().filter(|a| a.path().is_ident("cfg"))
    }

    /// The parenthesised parameter list, for "this method takes ..." diagnostics.
    pub(crate) fn params_span(&self) -> Span {
        self.sig.paren_token.span.join()
    }

    /// Where a missing return type would go: right after the parameter list.
    pub(crate) fn output_span(&self) -> Span {
        match self.output {
            Some(ty) => ty.span(),
            None => self.sig.paren_token.span.close(),
        }
    }
}

/// The name of a plain `impl Name { .. }` self type.
fn type_name(ty: &Type) -> Option<&Ident> {
    match ty {
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            last.arguments.is_none().then_some(&last.ident)
        }
        _ => None,
    }
}

/// Finds the role attribute of every method. Reports role attributes that do not belong in
/// this kind of impl, two roles on one method, and role attributes on non-method items.
fn methods<'a>(
    cx: &Ctxt,
    item: &'a ItemImpl,
    allowed: &[RoleKind],
    context_type: &str,
    krate: &CratePath,
) -> Vec<Method<'a>> {
    let role_of = |attr: &Attribute| RoleKind::of_path(attr.path(), krate.given());
    let mut methods = Vec::new();
    for impl_item in &item.items {
        let ImplItem::Fn(func) = impl_item else {
            for attr in item_attrs(impl_item) {
                if let Some(kind) = role_of(attr) {
                    cx.error_spanned_by(attr, format!("`#[{}]` goes on a method", kind.name()));
                }
            }
            continue;
        };
        let mut found: Option<(RoleKind, &Attribute)> = None;
        let mut role = None;
        for attr in &func.attrs {
            let Some(kind) = role_of(attr) else {
                continue;
            };
            if !allowed.contains(&kind) {
                cx.error_spanned_by(attr, misplaced(kind));
                continue;
            }
            if let Some((first, _)) = found {
                let msg = if first == kind {
                    format!("`#[{}]` is repeated", kind.name())
                } else {
                    format!(
                        "`#[{}]` conflicts with `#[{}]`: a method has one role; split it into two methods",
                        kind.name(),
                        first.name()
                    )
                };
                cx.error_spanned_by(attr, msg);
                continue;
            }
            found = Some((kind, attr));
            role = attr::role(cx, kind, attr).map(|r| (r, attr));
        }
        if let Some((role, attr)) = role {
            methods.push(Method::from_fn(role, attr, func, context_type));
        }
    }
    methods
}

fn misplaced(kind: RoleKind) -> String {
    match kind {
        RoleKind::Activity => {
            "`#[activity]` belongs in an `#[activities]` impl block, not a `#[workflow]` one".into()
        }
        other => format!(
            "`#[{}]` belongs in a `#[workflow]` impl block, not an `#[activities]` one",
            other.name()
        ),
    }
}

fn item_attrs(item: &ImplItem) -> &[Attribute] {
    match item {
        ImplItem::Const(i) => &i.attrs,
        ImplItem::Fn(i) => &i.attrs,
        ImplItem::Type(i) => &i.attrs,
        ImplItem::Macro(i) => &i.attrs,
        _ => &[],
    }
}

/// The impl block as the user wrote it, minus the role attributes (which are inert inside
/// `#[workflow]`/`#[activities]`: left in place they would run the standalone macros).
pub(crate) fn without_role_attrs(item: &ItemImpl, krate: &CratePath) -> ItemImpl {
    let role_of = |attr: &Attribute| RoleKind::of_path(attr.path(), krate.given());
    let mut item = item.clone();
    for impl_item in &mut item.items {
        let attrs = match impl_item {
            ImplItem::Const(i) => &mut i.attrs,
            ImplItem::Fn(i) => &mut i.attrs,
            ImplItem::Type(i) => &mut i.attrs,
            ImplItem::Macro(i) => &mut i.attrs,
            _ => continue,
        };
        let validator = attrs
            .iter()
            .any(|a| role_of(a) == Some(RoleKind::Validator));
        attrs.retain(|attr| role_of(attr).is_none());
        if validator {
            // A validator must take `&T` of the update's arguments, `&String` included, which
            // clippy's `ptr_arg` would otherwise flag in the user's code.
            attrs.push(syn::parse_quote!(#[allow(clippy::ptr_arg)]));
        }
    }
    item
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::ToTokens;
    use syn::parse_quote;

    /// Role, wire name, has a context, receiver, number of wire arguments.
    type Shape = (RoleKind, String, bool, Option<Borrow>, usize);

    fn parse(item: &ItemImpl) -> (Vec<Shape>, String) {
        let cx = Ctxt::new();
        let wf = Workflow::from_syn(&cx, item, WorkflowArgs::default());
        let shapes = wf
            .methods
            .iter()
            .map(|m| {
                (
                    m.role.kind(),
                    m.wire_name(),
                    m.ctx.is_some(),
                    m.receiver.as_ref().map(|r| r.borrow),
                    m.args.len(),
                )
            })
            .collect();
        (
            shapes,
            cx.check().err().map(|e| e.to_string()).unwrap_or_default(),
        )
    }

    #[test]
    fn classifies_every_form() {
        let item: ItemImpl = parse_quote! {
            impl AgentRun {
                #[init] fn new(input: &AgentInput) -> Self { todo!() }
                #[run] async fn run(ctx: &mut WorkflowContext<Self>, input: AgentInput) -> Result<String, WorkflowError> { todo!() }
                #[signal] fn pause(&mut self) {}
                #[signal(name = "note_wire")] async fn note(ctx: &WorkflowContext<Self>, text: String, n: u32) {}
                #[query] fn status(&self) -> u32 { 0 }
                #[update] fn add(&mut self, item: u32) -> Result<u32, UpdateError> { todo!() }
                #[validator(add)] fn check_add(&self, item: &u32) -> Result<(), Rejection> { Ok(()) }
                fn helper(&self) {}
            }
        };
        let (shapes, errors) = parse(&item);
        assert_eq!(errors, "");
        use RoleKind::*;
        assert_eq!(
            shapes,
            vec![
                (Init, "new".into(), false, None, 1),
                (Run, "run".into(), true, None, 1),
                (Signal, "pause".into(), false, Some(Borrow::Mut), 0),
                (Signal, "note_wire".into(), true, None, 2),
                (Query, "status".into(), false, Some(Borrow::Ref), 0),
                (Update, "add".into(), false, Some(Borrow::Mut), 1),
                (Validator, "check_add".into(), false, Some(Borrow::Ref), 1),
            ]
        );
    }

    #[test]
    fn two_roles_on_one_method() {
        let item: ItemImpl = parse_quote! {
            impl W { #[signal] #[query] fn x(&self) {} }
        };
        let (shapes, errors) = parse(&item);
        assert_eq!(shapes.len(), 1);
        assert!(
            errors.contains("`#[query]` conflicts with `#[signal]`"),
            "{errors}"
        );
    }

    #[test]
    fn activity_in_a_workflow_is_misplaced() {
        let item: ItemImpl = parse_quote! {
            impl W { #[activity] async fn x(&self) {} }
        };
        let (shapes, errors) = parse(&item);
        assert!(shapes.is_empty());
        assert!(
            errors.contains("belongs in an `#[activities]` impl block"),
            "{errors}"
        );
    }

    #[test]
    fn role_attributes_are_stripped() {
        let item: ItemImpl = parse_quote! {
            impl W {
                /// docs stay
                #[signal(name = "x")] #[inline] fn x(&mut self) {}
                #[wf_sdk::query] fn y(&self) -> u8 { 0 }
            }
        };
        let out = without_role_attrs(&item, &CratePath::Default)
            .into_token_stream()
            .to_string();
        assert!(!out.contains("signal") && !out.contains("query"), "{out}");
        assert!(out.contains("inline") && out.contains("docs stay"), "{out}");
    }
}
