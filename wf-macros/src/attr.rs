//! Attribute arguments, parsed strictly: an unknown key is an error that lists the valid ones.
//!
//! Two kinds of attributes are read here: the outer ones (`#[workflow(..)]`,
//! `#[activities(..)]`), whose arguments arrive as a token stream, and the role attributes on
//! methods (`#[signal(name = "..")]`, `#[validator(update)]`, ...), which the outer macro finds,
//! parses and strips.

use crate::ctxt::Ctxt;
use crate::hygiene;
use proc_macro2::TokenStream;
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::{Attribute, Expr, ExprLit, Ident, Lit, LitStr, Meta, Path};

/// Arguments of `#[workflow(..)]`.
#[derive(Default)]
pub(crate) struct WorkflowArgs {
    /// `name = ".."`: the workflow type's wire name.
    pub name: Option<LitStr>,
    /// `crate = ".."`.
    pub krate: CratePath,
    /// `dynamic`: a dynamic workflow type (see `dynamic_workflow.rs`).
    pub dynamic: bool,
}

/// Arguments of `#[activities(..)]`.
#[derive(Default)]
pub(crate) struct ActivitiesArgs {
    /// `crate = ".."`.
    pub krate: CratePath,
}

/// `crate = "::path"`: where the generated code finds wf, for a crate that depends on
/// `wf-sdk` under another name (serde's `#[serde(crate = "..")]`).
#[derive(Clone, Debug, Default)]
pub(crate) enum CratePath {
    /// Not given: `::wf_sdk`.
    #[default]
    Default,
    Given(Path),
    /// Given, but not a path (reported): where wf is is unknown.
    Invalid,
}

impl CratePath {
    /// `<crate>::__private`, the one path generated code reaches wf through; `None` if the
    /// value was rejected, in which case nothing that names wf can be generated.
    pub(crate) fn private(&self) -> Option<TokenStream> {
        match self {
            CratePath::Default => Some(hygiene::private(None)),
            CratePath::Given(path) => Some(hygiene::private(Some(path))),
            CratePath::Invalid => None,
        }
    }

    /// The path as given, which also qualifies role attributes: `#[my_wf::signal]`.
    pub(crate) fn given(&self) -> Option<&Path> {
        match self {
            CratePath::Given(path) => Some(path),
            CratePath::Default | CratePath::Invalid => None,
        }
    }
}

/// What the engine does with a handler still running when its run finishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum Unfinished {
    #[default]
    Warn,
    Abandon,
}

/// The attribute names that give a method its role.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RoleKind {
    Init,
    Run,
    Signal,
    Query,
    Update,
    Validator,
    Activity,
}

impl RoleKind {
    pub(crate) const ALL: [RoleKind; 7] = [
        RoleKind::Init,
        RoleKind::Run,
        RoleKind::Signal,
        RoleKind::Query,
        RoleKind::Update,
        RoleKind::Validator,
        RoleKind::Activity,
    ];

    /// The attribute's name, as users write it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            RoleKind::Init => "init",
            RoleKind::Run => "run",
            RoleKind::Signal => "signal",
            RoleKind::Query => "query",
            RoleKind::Update => "update",
            RoleKind::Validator => "validator",
            RoleKind::Activity => "activity",
        }
    }

    /// The role named by an attribute path: `signal`, `wf_sdk::signal`, or `my_wf::signal`
    /// when `krate` (the `crate = ".."` path) is `my_wf`.
    pub(crate) fn of_path(path: &Path, krate: Option<&Path>) -> Option<RoleKind> {
        let segments: Vec<&Ident> = path.segments.iter().map(|s| &s.ident).collect();
        let (last, qualifier) = segments.split_last()?;
        let qualified_by_wf = match qualifier {
            [] => true,
            [one] if *one == "wf_sdk" || *one == "wf_macros" => true,
            _ => krate.is_some_and(|k| {
                k.segments
                    .iter()
                    .map(|s| &s.ident)
                    .eq(qualifier.iter().copied())
            }),
        };
        if !qualified_by_wf {
            return None;
        }
        RoleKind::ALL.into_iter().find(|kind| *last == kind.name())
    }
}

/// A role attribute with its parsed arguments.
#[derive(Clone, Debug)]
pub(crate) enum Role {
    Init,
    Run,
    /// `dynamic`: the catch-all handler of its role (see `dynamic.rs`).
    Signal {
        name: Option<LitStr>,
        unfinished: Unfinished,
        dynamic: bool,
    },
    Query {
        name: Option<LitStr>,
        dynamic: bool,
    },
    Update {
        name: Option<LitStr>,
        unfinished: Unfinished,
        dynamic: bool,
    },
    /// `#[validator(update)]`: the Rust name of the update it checks.
    Validator {
        update: Ident,
    },
    Activity {
        name: Option<LitStr>,
    },
}

impl Role {
    pub(crate) fn kind(&self) -> RoleKind {
        match self {
            Role::Init => RoleKind::Init,
            Role::Run => RoleKind::Run,
            Role::Signal { .. } => RoleKind::Signal,
            Role::Query { .. } => RoleKind::Query,
            Role::Update { .. } => RoleKind::Update,
            Role::Validator { .. } => RoleKind::Validator,
            Role::Activity { .. } => RoleKind::Activity,
        }
    }

    /// Whether this is a catch-all handler (`#[signal(dynamic)]`, ...).
    pub(crate) fn is_dynamic(&self) -> bool {
        matches!(
            self,
            Role::Signal { dynamic: true, .. }
                | Role::Query { dynamic: true, .. }
                | Role::Update { dynamic: true, .. }
        )
    }

    /// The `name = ".."` override, for roles that have a wire name.
    pub(crate) fn wire_name(&self) -> Option<&LitStr> {
        match self {
            Role::Signal { name, .. }
            | Role::Query { name, .. }
            | Role::Update { name, .. }
            | Role::Activity { name } => name.as_ref(),
            Role::Init | Role::Run | Role::Validator { .. } => None,
        }
    }
}

/// Parses the arguments of `#[workflow(..)]`.
pub(crate) fn workflow_args(cx: &Ctxt, tokens: TokenStream) -> WorkflowArgs {
    let mut args = WorkflowArgs::default();
    parse_keys(
        cx,
        "workflow",
        &["name", "crate", "dynamic"],
        tokens,
        |key, meta| {
            match key {
                "name" => args.name = Some(wire_name(meta)?),
                "dynamic" => args.dynamic = dynamic_flag(meta)?,
                _ => crate_path(&mut args.krate, meta)?,
            }
            Ok(())
        },
    );
    args
}

/// Parses the arguments of `#[activities(..)]`.
pub(crate) fn activities_args(cx: &Ctxt, tokens: TokenStream) -> ActivitiesArgs {
    let mut args = ActivitiesArgs::default();
    parse_keys(cx, "activities", &["crate"], tokens, |_, meta| {
        crate_path(&mut args.krate, meta)
    });
    args
}

/// Parses a role attribute, reporting bad arguments. The role is kept despite them (with the
/// arguments that did parse), so that a typo in a key is not also reported as, say, a missing
/// `#[run]`; `None` only for a validator that names no update.
pub(crate) fn role(cx: &Ctxt, kind: RoleKind, attr: &Attribute) -> Option<Role> {
    let what = kind.name();
    let tokens = match &attr.meta {
        Meta::Path(_) => TokenStream::new(),
        Meta::List(list) => list.tokens.clone(),
        Meta::NameValue(nv) => {
            cx.error_spanned_by(
                &nv.value,
                format!("`#[{what} = ..]` is not a form of this attribute; write `#[{what}]` or `#[{what}(..)]`"),
            );
            return None;
        }
    };
    match kind {
        RoleKind::Init | RoleKind::Run => {
            parse_keys(cx, what, &[], tokens, |_, _| Ok(()));
            Some(if kind == RoleKind::Init {
                Role::Init
            } else {
                Role::Run
            })
        }
        RoleKind::Activity => {
            let mut name = None;
            parse_keys(cx, what, &["name"], tokens, |_, meta| {
                name = Some(wire_name(meta)?);
                Ok(())
            });
            Some(Role::Activity { name })
        }
        RoleKind::Query => {
            let (mut name, mut dynamic) = (None, false);
            parse_keys(cx, what, &["name", "dynamic"], tokens, |key, meta| {
                match key {
                    "name" => name = Some(wire_name(meta)?),
                    _ => dynamic = dynamic_flag(meta)?,
                }
                Ok(())
            });
            let name = dynamic_unnamed(cx, what, name, dynamic);
            Some(Role::Query { name, dynamic })
        }
        RoleKind::Signal | RoleKind::Update => {
            let (mut name, mut dynamic) = (None, false);
            let mut unfinished = Unfinished::Warn;
            let keys = &["name", "unfinished", "dynamic"];
            parse_keys(cx, what, keys, tokens, |key, meta| {
                match key {
                    "name" => name = Some(wire_name(meta)?),
                    "unfinished" => unfinished = unfinished_policy(meta)?,
                    _ => dynamic = dynamic_flag(meta)?,
                }
                Ok(())
            });
            let name = dynamic_unnamed(cx, what, name, dynamic);
            Some(match kind {
                RoleKind::Signal => Role::Signal {
                    name,
                    unfinished,
                    dynamic,
                },
                _ => Role::Update {
                    name,
                    unfinished,
                    dynamic,
                },
            })
        }
        RoleKind::Validator => match syn::parse2::<Ident>(tokens) {
            Ok(update) => Some(Role::Validator { update }),
            Err(_) => {
                cx.error_spanned_by(
                    attr,
                    "`#[validator]` names the update it checks, e.g. `#[validator(change_goal)]`",
                );
                None
            }
        },
    }
}

/// Parses `key = "value", ..`, calling `f` for each valid key. Reports an unknown or repeated
/// key, or a malformed list. A key in error is skipped up to the next comma and the others are
/// still read, so that a typo in one does not lose, say, the `crate` path after it.
fn parse_keys(
    cx: &Ctxt,
    what: &str,
    valid: &[&str],
    tokens: TokenStream,
    mut f: impl FnMut(&str, &ParseNestedMeta) -> syn::Result<()>,
) {
    if valid.is_empty() {
        if !tokens.is_empty() {
            cx.error_spanned_by(tokens, format!("`#[{what}]` takes no arguments"));
        }
        return;
    }
    let mut seen: Vec<String> = Vec::new();
    let mut one = |meta: &ParseNestedMeta| -> syn::Result<()> {
        let key = meta
            .path
            .get_ident()
            .map(Ident::to_string)
            .unwrap_or_default();
        if !valid.contains(&key.as_str()) {
            let list = valid
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ");
            let shown = quote::ToTokens::to_token_stream(&meta.path)
                .to_string()
                .replace(' ', "");
            return Err(meta.error(format!(
                "unknown key `{shown}` in `#[{what}(..)]`; valid keys: {list}"
            )));
        }
        if seen.contains(&key) {
            return Err(meta.error(format!("`{key}` is given twice in `#[{what}(..)]`")));
        }
        seen.push(key.clone());
        f(&key, meta)
    };
    let parser = syn::meta::parser(|meta| {
        if let Err(err) = one(&meta) {
            cx.syn_error(err);
            while !meta.input.is_empty() && !meta.input.peek(syn::Token![,]) {
                meta.input.parse::<proc_macro2::TokenTree>()?;
            }
        }
        Ok(())
    });
    if let Err(err) = parser.parse2(tokens) {
        cx.syn_error(err);
    }
}

/// `dynamic`: a bare flag, no value.
fn dynamic_flag(meta: &ParseNestedMeta) -> syn::Result<bool> {
    if meta.input.peek(syn::Token![=]) {
        return Err(meta.error("`dynamic` takes no value: write `dynamic` alone"));
    }
    Ok(true)
}

/// `name = "wire_name"`: a non-empty string.
fn wire_name(meta: &ParseNestedMeta) -> syn::Result<LitStr> {
    let lit: LitStr = meta.value()?.parse()?;
    if lit.value().trim().is_empty() {
        return Err(syn::Error::new(lit.span(), "a wire name cannot be empty"));
    }
    Ok(lit)
}

/// `crate = "::path"`: a path, written as a string (as serde's `crate`). A value that is not
/// one leaves `krate` [`CratePath::Invalid`].
fn crate_path(krate: &mut CratePath, meta: &ParseNestedMeta) -> syn::Result<()> {
    *krate = CratePath::Invalid;
    let value: Expr = meta.value()?.parse()?;
    let Expr::Lit(ExprLit {
        lit: Lit::Str(lit), ..
    }) = &value
    else {
        return Err(syn::Error::new_spanned(
            value,
            "`crate` takes the path of wf's crate as a string, e.g. `crate = \"::my_wf\"`",
        ));
    };
    match lit.parse_with(Path::parse_mod_style) {
        Ok(path) => {
            *krate = CratePath::Given(path);
            Ok(())
        }
        Err(_) => Err(syn::Error::new(
            lit.span(),
            format!(
                "{:?} is not a path; `crate` takes the path of wf's crate, e.g. `crate = \"::my_wf\"`",
                lit.value()
            ),
        )),
    }
}

/// `unfinished = "warn" | "abandon"`.
fn unfinished_policy(meta: &ParseNestedMeta) -> syn::Result<Unfinished> {
    let lit: LitStr = meta.value()?.parse()?;
    match lit.value().as_str() {
        "warn" => Ok(Unfinished::Warn),
        "abandon" => Ok(Unfinished::Abandon),
        other => Err(syn::Error::new(
            lit.span(),
            format!("unknown value `{other:?}` for `unfinished`; valid values: `\"warn\"` (the default), `\"abandon\"`"),
        )),
    }
}

/// The attribute key, and the validator target, that make a handler dynamic.
pub(crate) const DYNAMIC: &str = "dynamic";

/// A dynamic handler has no wire name: `name = ".."` next to `dynamic` is an error (on the
/// name), and is dropped.
fn dynamic_unnamed(cx: &Ctxt, what: &str, name: Option<LitStr>, dynamic: bool) -> Option<LitStr> {
    match name {
        Some(lit) if dynamic => {
            cx.error_spanned_by(
                &lit,
                format!(
                    "a dynamic {what} handler takes every {what} no other handler takes, so it has \
                     no wire name of its own; remove `name = ..` (or remove `dynamic` to make a \
                     named handler)"
                ),
            );
            None
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;
    use syn::parse_quote;

    fn errors(cx: Ctxt) -> String {
        cx.check().err().map(|e| e.to_string()).unwrap_or_default()
    }

    #[test]
    fn workflow_name_is_parsed() {
        let cx = Ctxt::new();
        let args = workflow_args(&cx, quote!(name = "agent_run"));
        assert_eq!(errors(cx), "");
        assert_eq!(args.name.unwrap().value(), "agent_run");
    }

    #[test]
    fn unknown_workflow_key_lists_valid_keys() {
        let cx = Ctxt::new();
        workflow_args(&cx, quote!(nme = "x"));
        let err = errors(cx);
        assert!(
            err.contains("unknown key `nme` in `#[workflow(..)]`; valid keys: `name`, `crate`"),
            "{err}"
        );
    }

    #[test]
    fn repeated_key_is_an_error() {
        let cx = Ctxt::new();
        workflow_args(&cx, quote!(name = "a", name = "b"));
        assert!(errors(cx).contains("`name` is given twice"));
    }

    #[test]
    fn empty_wire_name_is_an_error() {
        let cx = Ctxt::new();
        workflow_args(&cx, quote!(name = ""));
        assert!(errors(cx).contains("cannot be empty"));
    }

    #[test]
    fn signal_keys() {
        let cx = Ctxt::new();
        let attr: Attribute = parse_quote!(#[signal(name = "wire", unfinished = "abandon")]);
        let parsed = role(&cx, RoleKind::Signal, &attr).unwrap();
        assert_eq!(errors(cx), "");
        match parsed {
            Role::Signal {
                name,
                unfinished,
                dynamic,
            } => {
                assert_eq!(name.unwrap().value(), "wire");
                assert_eq!(unfinished, Unfinished::Abandon);
                assert!(!dynamic);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn query_has_no_unfinished_key() {
        let cx = Ctxt::new();
        let attr: Attribute = parse_quote!(#[query(unfinished = "abandon")]);
        assert!(matches!(
            role(&cx, RoleKind::Query, &attr),
            Some(Role::Query {
                name: None,
                dynamic: false
            })
        ));
        let err = errors(cx);
        assert!(
            err.contains("unknown key `unfinished` in `#[query(..)]`; valid keys: `name`"),
            "{err}"
        );
    }

    #[test]
    fn dynamic_is_a_flag_without_a_name() {
        let cx = Ctxt::new();
        let attr: Attribute = parse_quote!(#[update(dynamic, unfinished = "abandon")]);
        let parsed = role(&cx, RoleKind::Update, &attr).unwrap();
        assert_eq!(errors(cx), "");
        assert!(parsed.is_dynamic());
        let cx = Ctxt::new();
        let attr: Attribute = parse_quote!(#[query(dynamic, name = "x")]);
        let parsed = role(&cx, RoleKind::Query, &attr).unwrap();
        assert!(errors(cx).contains("remove `name = ..`"));
        assert!(parsed.is_dynamic() && parsed.wire_name().is_none());
    }

    #[test]
    fn bad_unfinished_value_lists_valid_values() {
        let cx = Ctxt::new();
        let attr: Attribute = parse_quote!(#[update(unfinished = "ignore")]);
        assert!(role(&cx, RoleKind::Update, &attr).is_some());
        let err = errors(cx);
        assert!(
            err.contains("unknown value") && err.contains("abandon"),
            "{err}"
        );
    }

    #[test]
    fn run_takes_no_arguments() {
        let cx = Ctxt::new();
        let attr: Attribute = parse_quote!(#[run(fast)]);
        assert!(matches!(role(&cx, RoleKind::Run, &attr), Some(Role::Run)));
        assert!(errors(cx).contains("`#[run]` takes no arguments"));
    }

    #[test]
    fn validator_names_its_update() {
        let cx = Ctxt::new();
        let attr: Attribute = parse_quote!(#[validator(change_goal)]);
        let parsed = role(&cx, RoleKind::Validator, &attr);
        assert_eq!(errors(cx), "");
        assert!(matches!(parsed, Some(Role::Validator { update }) if update == "change_goal"));

        let cx = Ctxt::new();
        let attr: Attribute = parse_quote!(#[validator]);
        assert!(role(&cx, RoleKind::Validator, &attr).is_none());
        assert!(errors(cx).contains("names the update it checks"));
    }

    #[test]
    fn role_paths() {
        let kind = |p: Path| RoleKind::of_path(&p, None);
        assert_eq!(kind(parse_quote!(signal)), Some(RoleKind::Signal));
        assert_eq!(kind(parse_quote!(wf_sdk::query)), Some(RoleKind::Query));
        assert_eq!(kind(parse_quote!(tokio::test)), None);
        assert_eq!(kind(parse_quote!(other::run)), None);
        assert_eq!(kind(parse_quote!(doc)), None);
        // With `crate = "::deps::wf"`, that path qualifies roles too.
        let krate: Path = parse_quote!(::deps::wf);
        let kind = |p: Path| RoleKind::of_path(&p, Some(&krate));
        assert_eq!(kind(parse_quote!(deps::wf::run)), Some(RoleKind::Run));
        assert_eq!(kind(parse_quote!(::deps::wf::run)), Some(RoleKind::Run));
        assert_eq!(kind(parse_quote!(wf_sdk::run)), Some(RoleKind::Run));
        assert_eq!(kind(parse_quote!(wf::run)), None);
    }

    #[test]
    fn crate_path_is_parsed() {
        let cx = Ctxt::new();
        let args = workflow_args(&cx, quote!(crate = "::my_wf", name = "x"));
        assert_eq!(errors(cx), "");
        assert_eq!(
            args.krate.private().unwrap().to_string(),
            ":: my_wf :: __private"
        );
        assert_eq!(args.name.unwrap().value(), "x");

        let cx = Ctxt::new();
        let args = activities_args(&cx, quote!(crate = "deps::wf"));
        assert_eq!(errors(cx), "");
        assert_eq!(
            args.krate.private().unwrap().to_string(),
            "deps :: wf :: __private"
        );

        let cx = Ctxt::new();
        let args = activities_args(&cx, TokenStream::new());
        assert_eq!(errors(cx), "");
        assert_eq!(
            args.krate.private().unwrap().to_string(),
            ":: wf_sdk :: __private"
        );
    }

    #[test]
    fn crate_value_must_be_a_path() {
        for value in [
            quote!("not a path"),
            quote!(""),
            quote!("::a::<T>"),
            quote!(::my_wf),
            quote!(5),
        ] {
            let cx = Ctxt::new();
            let args = workflow_args(&cx, quote!(crate = #value));
            let err = errors(cx);
            assert!(
                err.contains("`crate` takes the path of wf's crate"),
                "{value}: {err}"
            );
            assert!(args.krate.private().is_none(), "{value}");
        }
    }

    #[test]
    fn unknown_keys_list_crate() {
        let cx = Ctxt::new();
        activities_args(&cx, quote!(prefix = "tools"));
        let err = errors(cx);
        assert!(
            err.contains("unknown key `prefix` in `#[activities(..)]`; valid keys: `crate`"),
            "{err}"
        );
    }

    #[test]
    fn a_bad_key_does_not_hide_the_next() {
        let cx = Ctxt::new();
        let args = workflow_args(&cx, quote!(nme = "x", crate = "::my_wf", name = 1));
        let err = errors(cx);
        assert!(err.contains("unknown key `nme`"), "{err}");
        assert!(err.contains("expected string literal"), "{err}");
        assert!(args.krate.given().is_some());
    }
}
