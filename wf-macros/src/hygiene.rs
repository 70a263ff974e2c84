//! How generated code names things without depending on the user's scope: wf's items through
//! one private path, its own variables through identifiers the user's code cannot see.
//!
//! - Every item of wf (and of `std`: `Option`, `Box`, `Vec`, ..) is spelled
//!   `<crate>::__private::Item`, where `<crate>` is `::wf_sdk` unless the attribute's
//!   `crate = ".."` names another path. Nothing comes from the prelude or the user's imports,
//!   so the expansion compiles under `#![no_implicit_prelude]` and with wf renamed.
//! - Every variable or parameter the generated code binds is a [`local`]: mixed-site hygiene,
//!   so it neither captures nor shadows a variable of the user's, whatever its name.

use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;
use syn::Path;

/// `<crate>::__private`: `krate` is the `crate = ".."` path, `None` for the default.
pub(crate) fn private(krate: Option<&Path>) -> TokenStream {
    match krate {
        Some(path) => quote!(#path::__private),
        None => quote!(::wf_sdk::__private),
    }
}

/// A variable of the generated code. `name` keeps its `__` prefix only to read well in
/// expansions; the mixed-site span is what keeps it apart from the user's names.
pub(crate) fn local(name: &str) -> Ident {
    Ident::new(name, Span::mixed_site())
}

/// The decoded arguments of a handler or activity, or the parameters of a client method:
/// `__arg0, __arg1, ..`.
pub(crate) fn args(n: usize) -> Vec<Ident> {
    (0..n).map(|i| local(&format!("__arg{i}"))).collect()
}
