//! Search attributes: `ctx.upsert_search_attributes` records the typed key-values a run is
//! found by (`client.list` filters on them). The command is a `SearchAttributesUpserted`
//! event; the store indexes its values when the task commits, and replay issues it again.

use super::commands::Commands;
use super::context::WorkflowContext;
use crate::data::history::EventKind;
use crate::data::limits::{check_reason, Ident, LimitError};
use crate::data::search::{SearchAttributes, SearchValue};

impl Commands {
    /// Records a `SearchAttributesUpserted` command.
    pub fn upsert_search_attributes(&mut self, attributes: SearchAttributes) {
        self.issued
            .push(EventKind::SearchAttributesUpserted { attributes });
    }
}

impl<W: 'static> WorkflowContext<W> {
    /// Sets search attributes of this run: each key now holds its value (a later upsert of
    /// the same key replaces it), the other keys keep theirs. Lists find the run by them
    /// (`ListFilter::search`) once this workflow task commits; describe shows them.
    ///
    /// ```ignore
    /// ctx.upsert_search_attributes([
    ///     ("customer", SearchValue::from("acme")),
    ///     ("amount", SearchValue::from(1250)),
    /// ])?;
    /// ```
    ///
    /// A key that is empty or over the name limit, or a keyword over the reason limit
    /// (`wf_core::data::limits`), records nothing and returns the error (`?` fails the run
    /// with it). The values carry over to the next run after a continue-as-new.
    pub fn upsert_search_attributes<K: Into<String>>(
        &self,
        attributes: impl IntoIterator<Item = (K, SearchValue)>,
    ) -> Result<(), LimitError> {
        let mut set = SearchAttributes::new();
        for (key, value) in attributes {
            let key = key.into();
            Ident::SearchAttributeKey.check(&key)?;
            if let SearchValue::Keyword(text) = &value {
                check_reason("search attribute value", text)?;
            }
            set.insert(key, value);
        }
        if !set.is_empty() {
            self.core.borrow_mut().upsert_search_attributes(set);
        }
        Ok(())
    }
}
