//! The store conformance suite against PostgreSQL: one test per property, each on a fresh
//! schema of the database `WF_POSTGRES_URL` names (skipped, loudly, without it; failed without
//! it under `WF_REQUIRE_POSTGRES=1`).

wf_core::store_conformance_tests!(wf_postgres::testing::database);
