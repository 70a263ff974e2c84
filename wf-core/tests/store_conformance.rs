//! The store conformance suite (`wf_core::store::conformance`) against wf-core's own stores,
//! through the same macro a store in another crate uses: `memory::<property>` and
//! `sqlite::<property>`.

mod memory {
    wf_core::store_conformance_tests!(wf_core::store::conformance::memory);
}

mod sqlite {
    wf_core::store_conformance_tests!(wf_core::store::conformance::sqlite_file);
}
