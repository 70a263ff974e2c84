//! The `init_state` of a workflow without `#[init]`: its state's `Default`, for named and
//! dynamic workflow types alike.

use crate::spans;
use proc_macro2::TokenStream;
use quote::quote;

/// `init_state` without `#[init]`: the type must be `Default`; rustc says so on its name.
pub(crate) fn default_init_state(self_ty: &syn::Type, p: &TokenStream) -> TokenStream {
    let default = spans::over(quote!(<Self as #p::Default>::default()), self_ty);
    quote!(fn init_state(_: &Self::Input) -> Self { #default })
}
