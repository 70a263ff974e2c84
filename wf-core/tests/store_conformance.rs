//! The store conformance suite (`wf_core::store::conformance`) against wf-core's own stores,
//! through the same macro a store in another crate uses: `memory::<property>` and
//! `sqlite::<property>`.

mod memory {
    wf_core::store_conformance_tests!(wf_core::store::conformance::memory);
}

mod sqlite {
    wf_core::store_conformance_tests!(wf_core::store::conformance::sqlite_file);
}

/// The fault-injecting wrapper, injecting nothing, is the store it wraps: `fault_store::<property>`.
mod fault_store {
    use std::sync::Arc;
    use wf_core::store::conformance::{OpenFuture, StoreUnderTest};
    use wf_core::store::faults::FaultStore;
    use wf_core::store::{MemoryStore, Store};

    pub struct Wrapped;

    impl StoreUnderTest for Wrapped {
        fn open(&self) -> OpenFuture<'_> {
            Box::pin(async { FaultStore::new(Arc::new(MemoryStore::new())) as Arc<dyn Store> })
        }

        fn durable(&self) -> bool {
            false
        }
    }

    pub fn wrapped(_property: &str) -> Wrapped {
        Wrapped
    }

    wf_core::store_conformance_tests!(wrapped);
}
