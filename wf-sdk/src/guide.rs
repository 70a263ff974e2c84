//! The guide's chapters, rendered from `docs/guide/*.md` so that every code sample in them is
//! a doctest (`cargo test -p wf-sdk --doc`).
//!
//! To add a chapter: write `docs/guide/NAME.md` (its first line `# Title`), add one line to the
//! list below where it belongs in reading order, and the same line's file to the index in
//! `docs/guide/README.md` (a test checks that the two agree).

/// Declares the `guide` module: its page lists the chapters in reading order, and each
/// chapter is a submodule whose documentation is one file of `docs/guide/`.
macro_rules! guide {
    ($($module:ident => $file:literal, $title:literal;)*) => {
        /// The wf guide: one chapter per topic, each sample compiled as a doctest. The
        /// same files are readable on their own in `docs/guide/` of the repository.
        ///
        /// Chapters, in reading order:
        ///
        $(#[doc = concat!("1. [", $title, "](crate::guide::", stringify!($module), ")")])*
        pub mod guide {
            $(
                #[doc = include_str!(concat!("../../docs/guide/", $file))]
                pub mod $module {}
            )*

            /// The chapter files in reading order (for the check against the index).
            #[cfg(test)]
            pub(crate) const FILES: &[&str] = &[$($file),*];
        }
    };
}

guide! {
    getting_started => "getting-started.md", "Getting started";
    signals_queries_updates => "signals-queries-updates.md", "Signals, queries and updates";
    activities => "activities.md", "Activities";
    timers_and_waits => "timers-and-waits.md", "Timers and waits";
    children_and_concurrency => "children-and-concurrency.md", "Children and concurrency";
    cancellation => "cancellation-and-time-limits.md", "Cancellation and time limits";
    versioning => "versioning.md", "Versioning and patching";
    testing => "testing.md", "Testing";
    serving_over_http => "serving-over-http.md", "Serving over HTTP";
    activities_in_other_languages => "activities-in-other-languages.md", "Activities in other languages";
    postgres => "postgres-and-several-machines.md", "PostgreSQL and several machines";
    flow_control => "flow-control.md", "Flow control";
    live_output => "live-output.md", "Live output: streams, published events and the feed";
    deploying => "deploying.md", "Deploying wf";
    postgres_tls => "postgres-tls.md", "TLS to PostgreSQL";
    https => "https.md", "HTTPS";
    tokens_and_roles => "tokens-and-roles.md", "Tokens and roles";
    operating => "operating.md", "Operating wf";
    incidents => "incidents.md", "Operating in incidents";
    idle_runs => "idle-runs.md", "Why a run is idle: blocked-on and time travel";
    coming_from => "coming-from.md", "Coming from Temporal, Restate or DBOS";
}

#[cfg(test)]
mod tests {
    /// `docs/guide/README.md` links every chapter of the list, in the same order.
    #[test]
    fn the_index_lists_every_chapter_in_order() {
        let index = include_str!("../../docs/guide/README.md");
        let mut at = 0;
        for file in super::guide::FILES {
            let link = format!("]({file})");
            match index[at..].find(&link) {
                Some(i) => at += i + link.len(),
                None => panic!(
                    "docs/guide/README.md does not link {file} after the chapters before it: \
                     add it to the index in the order of wf-sdk/src/guide.rs"
                ),
            }
        }
    }
}
