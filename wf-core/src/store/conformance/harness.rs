//! How the suite runs a store: the store under test ([`StoreUnderTest`]) that a factory gives
//! each property, the runners, and the macro that makes one test per property.

use crate::store::{MemoryStore, SqliteStore, Store};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A store opening, as [`StoreUnderTest::open`] returns it.
pub type OpenFuture<'a> = Pin<Box<dyn Future<Output = Arc<dyn Store>> + Send + 'a>>;

/// One property's store under test: a database of its own, on which it opens stores.
///
/// A factory — any `Fn(&str) -> impl StoreUnderTest`, given the property's name — makes one
/// per property; [`store_conformance_tests!`](crate::store_conformance_tests) calls it.
pub trait StoreUnderTest: Send + Sync + 'static {
    /// Opens a store on this property's database: empty the first time. A test that fails to
    /// open one panics.
    fn open(&self) -> OpenFuture<'_>;

    /// Whether a store opened again sees everything the stores before it committed, and
    /// stores open at the same time share the data (several processes on one database). The
    /// properties that need it ([`check_durable`]) pass at once for a store that is not.
    fn durable(&self) -> bool;

    /// Why this store cannot be tested here (e.g. no database server is configured), if it
    /// cannot: the runners then print the reason and pass without running the property. The
    /// default is `None`: always tested.
    fn skipped(&self) -> Option<String> {
        None
    }
}

/// The memory store under test: each [`open`](StoreUnderTest::open) gives a new, empty store.
pub struct MemoryUnderTest;

/// A factory of [`MemoryUnderTest`].
pub fn memory(_property: &str) -> MemoryUnderTest {
    MemoryUnderTest
}

impl StoreUnderTest for MemoryUnderTest {
    fn open(&self) -> OpenFuture<'_> {
        Box::pin(async { Arc::new(MemoryStore::new()) as Arc<dyn Store> })
    }

    fn durable(&self) -> bool {
        false
    }
}

/// A SQLite file in the temp directory, named for the property, removed (with its WAL files)
/// on drop.
pub struct SqliteFile {
    path: PathBuf,
}

/// A factory of [`SqliteFile`]s.
pub fn sqlite_file(property: &str) -> SqliteFile {
    SqliteFile::new(property)
}

impl SqliteFile {
    /// A new file for `name` (the process id and a counter keep names apart).
    pub fn new(name: &str) -> SqliteFile {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let unique = NEXT.fetch_add(1, Ordering::Relaxed);
        let file = format!("wf-conformance-{name}-{}-{unique}.db", std::process::id());
        let db = SqliteFile {
            path: std::env::temp_dir().join(file),
        };
        db.remove_files();
        db
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens a SQLite store on the file, with the default options.
    pub fn open_sqlite(&self) -> SqliteStore {
        SqliteStore::open(&self.path).expect("open the test database")
    }

    fn remove_files(&self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut p = self.path.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
}

impl Drop for SqliteFile {
    fn drop(&mut self) {
        self.remove_files();
    }
}

impl StoreUnderTest for SqliteFile {
    fn open(&self) -> OpenFuture<'_> {
        Box::pin(async { Arc::new(self.open_sqlite()) as Arc<dyn Store> })
    }

    fn durable(&self) -> bool {
        true
    }
}

/// The runtime a property runs on: several threads, so that concurrent callers really race.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("start a tokio runtime for a store property")
}

/// Runs a property on a fresh store from `factory`; panics if it does not hold.
pub fn check<S, P, F>(name: &str, factory: impl FnOnce(&str) -> S, property: P)
where
    S: StoreUnderTest,
    P: FnOnce(Arc<dyn Store>) -> F,
    F: Future<Output = ()>,
{
    let db = factory(name);
    if let Some(why) = db.skipped() {
        eprintln!("{name}: SKIPPED: {why}");
        return;
    }
    runtime().block_on(async move {
        let store = db.open().await;
        property(store).await;
        // The database goes after every store on it (a file is removed on drop).
        drop(db);
    });
}

/// Runs a property that opens stores itself (again, or several at once) on the database from
/// `factory`; passes at once if that store is not [durable](StoreUnderTest::durable).
pub fn check_durable<S, P, F>(name: &str, factory: impl FnOnce(&str) -> S, property: P)
where
    S: StoreUnderTest,
    P: FnOnce(Arc<dyn StoreUnderTest>) -> F,
    F: Future<Output = ()>,
{
    let db: Arc<dyn StoreUnderTest> = Arc::new(factory(name));
    if let Some(why) = db.skipped() {
        eprintln!("{name}: SKIPPED: {why}");
        return;
    }
    if !db.durable() {
        eprintln!("{name}: skipped, the store under test is not durable");
        return;
    }
    runtime().block_on(property(db));
}

/// Generates one `#[test]` per property of the store conformance suite, named for the
/// property, each running it on a fresh store from the factory: a function (or closure) that
/// takes the property's name and returns a [`StoreUnderTest`](crate::store::conformance::StoreUnderTest).
///
/// A store in another crate proves itself with one file in its `tests/` (with wf-core's
/// `conformance` feature on, e.g. as a dev-dependency):
///
/// ```ignore
/// // tests/conformance.rs
/// wf_core::store_conformance_tests!(my_store::testing::database);
/// ```
///
/// To run the suite for several stores in one file, call it once per module.
#[macro_export]
macro_rules! store_conformance_tests {
    ($factory:expr $(,)?) => {
        $crate::__store_conformance_properties!(tests($factory));
    };
}

/// Every property of the suite, with how it runs (`check`: on a fresh store; `check_durable`:
/// it reopens the database itself); expanded by [`__store_conformance_expand!`].
#[doc(hidden)]
#[macro_export]
macro_rules! __store_conformance_properties {
    ($mode:ident $args:tt) => {
        $crate::__store_conformance_expand! {$mode $args [
            check atomicity::a_commit_that_fails_midway_changes_nothing,
            check atomicity::a_start_that_fails_midway_changes_nothing,
            check atomicity::concurrent_callers_each_get_their_own_result,
            check start::start_writes_workflow_started_and_makes_the_run_ready,
            check start::start_fails_with_already_started_while_a_run_is_running,
            check start::start_use_existing_delivers_messages_to_the_running_run,
            check start::start_terminate_existing_closes_the_old_run_and_starts_a_new_one,
            check start::start_after_a_closed_run_begins_a_new_chain,
            check start::start_messages_are_delivered_in_order_with_dedupe,
            check start::start_with_its_first_task_records_both,
            check start::start_with_a_first_task_that_records_nothing_leaves_the_run_idle,
            check start::start_with_a_failing_first_task_keeps_the_start_alone,
            check start::start_with_task_on_a_running_id_follows_the_policy_and_skips_the_task,
            check start_delay::a_delayed_run_waits_for_its_start_even_when_signalled,
            check queues::a_queue_of_one_admits_one_at_a_time_by_priority,
            check queues::a_queue_refuses_a_dedupe_id_held_by_a_running_run,
            check queues::a_queue_without_settings_admits_at_once,
            check queues::a_queue_rate_admits_as_its_bucket_refills,
            check queue_usage::queue_usage_counts_held_and_running_runs,
            check queues::queue_keys_of_equal_weight_take_turns_whatever_their_backlogs,
            check queues::queue_keys_share_admissions_by_weight,
            check queues::a_deleted_or_purged_run_leaves_its_queue,
            check start_delay::debounced_starts_make_one_run_with_the_latest_input,
            check_durable start_delay::concurrent_debounced_starts_on_one_database_make_one_run,
            check start_requests::a_retried_start_returns_the_run_its_request_id_started,
            check start_requests::a_retried_start_delivers_its_signals_once,
            check start_requests::a_use_existing_start_remembers_the_run_it_kept,
            check start_requests::id_reuse_policies_decide_after_a_closed_run,
            check start_requests::purge_forgets_the_request_ids_of_a_purged_chain,
            check deliver_dedupe::deliver_to_an_unknown_workflow_or_run_is_not_found,
            check deliver_dedupe::deliver_enqueues_and_makes_an_idle_run_ready,
            check deliver_dedupe::a_signal_id_is_delivered_once,
            check deliver_dedupe::a_duplicate_update_is_answered_with_its_current_record,
            check deliver_dedupe::a_closed_run_refuses_new_messages_but_answers_duplicate_updates,
            check deliver_dedupe::deliver_to_an_explicit_run_id_targets_that_run,
            check deliver_dedupe::a_committed_message_naming_a_chain_reaches_only_that_chain,
            check deliver_dedupe::pending_messages_are_the_inbox_until_a_task_applies_them,
            check deliver_dedupe::a_task_that_moves_an_update_through_several_states_records_the_last,
            check workflow_tasks::ready_runs_are_leased_oldest_ready_first,
            check workflow_tasks::a_leased_run_is_not_polled_again_until_its_lease_expires,
            check workflow_tasks::commit_appends_events_consumes_the_inbox_and_releases_the_run,
            check workflow_tasks::commit_with_a_stale_next_event_id_conflicts_and_changes_nothing,
            check workflow_tasks::commit_without_the_lease_conflicts,
            check workflow_tasks::a_lease_free_commit_needs_a_free_run_an_empty_inbox_and_the_same_history,
            check workflow_tasks::messages_arriving_during_a_task_make_the_run_ready_again,
            check workflow_tasks::close_with_unconsumed_messages_fails_with_new_messages,
            check workflow_tasks::close_completes_or_fails_the_run_and_drops_its_pending_work,
            check workflow_tasks::a_failed_task_is_recorded_and_retried_at_its_retry_time,
            check workflow_tasks::release_makes_the_run_ready_at_once,
            check workflow_tasks::polls_filtered_by_type_take_only_those_runs,
            check workflow_tasks::polls_filtered_by_task_queue_take_only_those_runs,
            check workflow_tasks::polls_of_any_type_take_every_type_on_their_queues,
            check workflow_tasks::history_reads_from_any_event_including_inside_a_commit,
            check activities::a_scheduled_activity_is_leased_once_with_its_deadlines,
            check activities::activities_are_leased_in_visible_order,
            check activities::a_heartbeat_extends_the_lease_and_keeps_its_details,
            check activities::a_retry_schedules_the_next_attempt_and_makes_older_attempts_stale,
            check activities::resolving_an_activity_puts_its_result_in_the_inbox_once,
            check activities::a_released_activity_is_visible_again_with_the_same_attempt,
            check activities::expired_activities_lists_expired_leases_and_passed_schedule_deadlines,
            check activities::cancelled_activities_are_dropped,
            check activities::attempts_stop_being_current_when_cancelled_retried_or_closed,
            check activities::polls_filtered_by_name_take_only_those_activities,
            check activities::an_activity_sent_to_a_task_queue_is_leased_only_where_served,
            check activities::activities_leased_in_their_commit_are_not_polled,
            check complete::a_held_attempt_outlives_its_engine_and_keeps_its_deadlines,
            check fairness::polls_lease_lower_priority_levels_first,
            check fairness::keys_of_equal_weight_take_turns_whatever_their_backlogs,
            check fairness::keys_share_turns_by_weight,
            check fairness::unkeyed_attempts_go_in_order_and_retries_keep_their_key,
            check flow::a_concurrency_limit_leases_no_more_than_its_room,
            check flow::a_dead_engines_attempts_free_their_slots_at_its_liveness_expiry,
            check flow::a_rate_limit_refills_at_its_rate_up_to_its_burst,
            check flow::flow_limits_are_set_listed_and_removed,
            check flow::a_commit_leasing_a_limited_activity_at_once_is_refused,
            check flow::a_limited_activity_is_leased_by_a_poll,
            check flow::a_commit_leases_at_once_what_the_limits_admit,
            check flow::a_commit_leases_nothing_covered_at_once_while_attempts_wait,
            check flow::polls_and_commits_say_whether_limits_hold_attempts_back,
            check flow::flow_usage_counts_running_and_waiting_attempts,
            check flow::a_late_poll_never_refills_a_rate_limit_twice,
            check liveness::engines_register_renew_and_leave,
            check liveness::a_dead_engines_workflow_task_is_free_at_its_liveness_expiry,
            check liveness::a_dead_engines_activity_attempt_expires_at_its_liveness_expiry,
            check timers::due_timers_fire_in_order_into_the_inbox_and_wake_the_run,
            check timers::a_cancelled_timer_never_fires,
            check timers::next_wakeup_is_the_earliest_future_due_time,
            check run_limits::a_run_times_out_once_at_its_deadline,
            check run_limits::a_run_timeout_retry_starts_after_its_backoff,
            check run_limits::continue_as_new_keeps_the_chains_execution_deadline,
            check run_limits::a_failed_run_is_retried_under_its_policy,
            check continue_as_new::continue_as_new_starts_the_next_run_in_the_same_chain,
            check continue_as_new::dedupe_ids_carry_over_continue_as_new,
            check continue_as_new::continue_as_new_abandons_the_unfinished_updates_of_the_old_run,
            check continue_as_new::continue_as_new_must_keep_the_workflow_id,
            check terminate::terminate_closes_the_latest_run_and_drops_its_pending_work,
            check terminate::terminate_refuses_finished_and_unknown_workflows,
            check terminate::terminating_a_child_tells_its_parent_and_applies_its_childrens_policies,
            check large_payloads::a_two_mib_payload_round_trips_everywhere,
            check purge::purge_deletes_closed_runs_before_the_cutoff_with_their_rows,
            check purge::purge_goes_in_bounded_batches_oldest_close_first,
            check purge::purge_never_touches_a_running_run,
            check purge::purge_keeps_a_chains_dedupe_ids_while_a_run_of_it_remains,
            check purge::purging_a_closed_child_keeps_its_result_for_the_running_parent,
            check repair::a_reset_starts_a_run_of_the_chain_from_a_prefix,
            check repair::a_fork_leaves_its_source_and_bad_resets_change_nothing,
            check repair::delete_takes_a_run_and_its_dedupe_ids,
            check search::lists_filter_by_search_attributes_and_times_and_page,
            check search::memos_and_search_attributes_carry_over_and_go_with_a_purge,
            check versioning::a_pinned_run_is_leased_only_by_its_build,
            check versioning::a_current_build_routes_new_and_auto_upgrade_runs_not_pinned_ones,
            check feed::a_commit_adds_its_events_to_the_feed_in_order,
            check feed::a_failed_commit_adds_nothing_to_the_feed,
            check feed::pauses_retries_and_terminations_are_in_the_feed,
            check feed::the_feed_is_filtered_by_type_id_and_kind,
            check feed::a_purged_run_leaves_the_feed,
            check_durable persistence::everything_survives_close_and_reopen,
            check_durable persistence::a_durably_delivered_update_survives_reopen,
            check_durable persistence::a_reopened_file_holds_exactly_the_committed_state,
            check_durable persistence::two_stores_on_one_file_see_each_others_writes,
        ]}
    };
}

/// The tests (`tests`), or the list of names (`names`), of the properties.
#[doc(hidden)]
#[macro_export]
macro_rules! __store_conformance_expand {
    (tests ($factory:expr) [$($run:ident $group:ident :: $property:ident,)*]) => {
        $(
            #[test]
            fn $property() {
                $crate::store::conformance::$run(
                    stringify!($property),
                    $factory,
                    $crate::store::conformance::$group::$property,
                );
            }
        )*
    };
    (names () [$($run:ident $group:ident :: $property:ident,)*]) => {
        [$(concat!(stringify!($group), "::", stringify!($property))),*]
    };
}
