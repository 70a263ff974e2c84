//! The role attributes used on their own. Inside `#[workflow]`/`#[activities]` they are inert
//! markers that the outer macro consumes, so these macros only ever run when a role attribute
//! is outside such an impl block, which is always a mistake.

use proc_macro2::{Span, TokenStream};
use quote::quote;

/// The error for `#[role]` outside its container, followed by the item unchanged (so the
/// item's own uses do not turn into further errors).
pub(crate) fn misplaced(role: &str, item: TokenStream) -> TokenStream {
    let (container, example) = if role == "activity" {
        ("activities", "#[activities]\nimpl Tools { .. }")
    } else {
        ("workflow", "#[workflow]\nimpl AgentRun { .. }")
    };
    let article = if container == "activities" { "an" } else { "a" };
    let msg = format!(
        "`#[{role}]` must be inside {article} `#[{container}]` impl block, on one of its methods:\n{example}"
    );
    let error = syn::Error::new(Span::call_site(), msg).to_compile_error();
    quote!(#error #item)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_item_and_names_the_container() {
        let out = misplaced(
            "signal",
            quote!(
                fn pause() {}
            ),
        )
        .to_string();
        assert!(
            out.contains("`#[signal]` must be inside a `#[workflow]` impl block"),
            "{out}"
        );
        assert!(out.ends_with("fn pause () { }"), "{out}");
        let out = misplaced(
            "activity",
            quote!(
                fn f() {}
            ),
        )
        .to_string();
        assert!(
            out.contains("inside an `#[activities]` impl block"),
            "{out}"
        );
    }
}
