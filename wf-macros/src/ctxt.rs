//! The error accumulator (serde_derive's `Ctxt`): every rule reports here instead of
//! returning early, so one expansion shows all independent mistakes at once.

use proc_macro2::TokenStream;
use quote::ToTokens;
use std::cell::RefCell;
use std::fmt::Display;

/// Collects errors while the input is parsed and checked.
///
/// Dropping a `Ctxt` without calling [`Ctxt::check`] panics: an error that is collected but
/// never emitted would make the macro silently accept a mistake.
pub(crate) struct Ctxt {
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Ctxt {
    pub(crate) fn new() -> Self {
        Ctxt {
            errors: RefCell::new(Some(Vec::new())),
        }
    }

    /// Reports `msg` on the tokens of `obj` (their first to last token).
    pub(crate) fn error_spanned_by<T: ToTokens, M: Display>(&self, obj: T, msg: M) {
        self.syn_error(syn::Error::new_spanned(obj.into_token_stream(), msg));
    }

    /// Reports an error produced by `syn` (a parse error, or one built with its own span).
    pub(crate) fn syn_error(&self, err: syn::Error) {
        self.errors
            .borrow_mut()
            .as_mut()
            .expect("Ctxt used after check()")
            .push(err);
    }

    /// Consumes the context: `Err` holds every reported error, combined for emission.
    pub(crate) fn check(self) -> Result<(), TokenStream> {
        let errors = self.errors.borrow_mut().take().expect("Ctxt checked twice");
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.into_iter().map(|e| e.to_compile_error()).collect())
        }
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        if !std::thread::panicking() && self.errors.borrow().is_some() {
            panic!("forgot to check for errors");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proc_macro2::Span;

    #[test]
    fn check_is_ok_without_errors() {
        assert!(Ctxt::new().check().is_ok());
    }

    #[test]
    fn check_returns_every_error() {
        let cx = Ctxt::new();
        cx.syn_error(syn::Error::new(Span::call_site(), "first"));
        cx.syn_error(syn::Error::new(Span::call_site(), "second"));
        let out = cx.check().unwrap_err().to_string();
        assert!(out.contains("first") && out.contains("second"), "{out}");
    }
}
