//! Fuzzing on the stable toolchain: property tests that throw hostile bytes at every decoder of
//! data the engine reads back or receives — history records (`codec`), stored payloads of the
//! engine's own types, `Payload::display`, inbox messages. Arbitrary bytes, arbitrary
//! MessagePack, and valid encodings with random mutations (bit flips, truncations, inserted
//! and removed bytes): every input must give a value or a typed error, never a panic, a stack
//! overflow or an allocation sized by a length field.
//!
//! `cargo test` runs a bounded number of cases (a few seconds in all); a developer runs more
//! with `PROPTEST_CASES=100000 cargo test -p wf-core fuzz_` (the variable replaces every
//! count below). A failure prints the smallest input it found: turn it into a unit test next
//! to the decoder it broke.
//!
//! Test-only (`#[cfg(test)] mod fuzz;`): imports only `data`, like the code it tests.

use super::activity::TimeoutKind;
use super::activity::{ActivityFailure, ActivityOptions, ActivityResolution, RetryPolicy};
use super::codec::{
    decode_event, decode_events, decode_events_by_reading, encode_event_into,
    HISTORY_FORMAT_VERSION,
};
use super::history::{EventKind, HistoryEvent};
use super::message::Message;
use super::payload::{value_len, Payload, PayloadError};
use super::run::{ChildOutcome, ParentClosePolicy, ParentInfo, RunSummary, TaskFailure};
use super::update::{UpdateOutcome, UpdateState};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::strategy::Union;
use std::time::Duration;

/// `cases` cases, unless `PROPTEST_CASES` asks for another count; no regression files
/// (a failure becomes a unit test instead).
fn config(cases: u32) -> ProptestConfig {
    let mut config = ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = cases;
    }
    config
}

// ---------------------------------------------------------------------------------------------
// Inputs

fn text() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z_]{0,8}", "\\PC{0,12}"]
}

fn payload() -> impl Strategy<Value = Payload> {
    prop_oneof![
        vec(any::<u8>(), 0..24).prop_map(Payload::unchecked),
        (text(), any::<u32>()).prop_map(|v| Payload::encode(&v).expect("small tuples encode")),
    ]
}

fn duration() -> impl Strategy<Value = Duration> {
    (any::<u64>(), 0..1_000_000_000u32).prop_map(|(s, n)| Duration::new(s, n))
}

fn options() -> impl Strategy<Value = ActivityOptions> {
    (
        (
            duration(),
            -1e300..1e300f64,
            proptest::option::of(duration()),
            any::<u32>(),
            vec(text(), 0..3),
        ),
        proptest::option::of(duration()),
        proptest::option::of(duration()),
        proptest::option::of(duration()),
    )
        .prop_map(|((ii, bc, mi, ma, nr), stc, s2c, hb)| ActivityOptions {
            retry: RetryPolicy {
                initial_interval: ii,
                backoff_coefficient: bc,
                maximum_interval: mi,
                maximum_attempts: ma,
                non_retryable_error_types: nr,
            },
            start_to_close: stc,
            schedule_to_close: s2c,
            heartbeat_timeout: hb,
            flow_key: None,
            ..ActivityOptions::default()
        })
}

fn failure() -> impl Strategy<Value = ActivityFailure> {
    (text(), text(), any::<bool>()).prop_map(|(kind, message, non_retryable)| ActivityFailure {
        kind,
        message,
        non_retryable,
    })
}

fn timeout() -> impl Strategy<Value = TimeoutKind> {
    prop_oneof![
        Just(TimeoutKind::StartToClose),
        Just(TimeoutKind::ScheduleToClose),
        Just(TimeoutKind::Heartbeat)
    ]
}

fn policy() -> impl Strategy<Value = ParentClosePolicy> {
    prop_oneof![
        Just(ParentClosePolicy::Terminate),
        Just(ParentClosePolicy::Abandon),
        Just(ParentClosePolicy::RequestCancel)
    ]
}

fn child_outcome() -> impl Strategy<Value = ChildOutcome> {
    prop_oneof![
        payload().prop_map(ChildOutcome::Completed),
        text().prop_map(ChildOutcome::Failed),
        text().prop_map(ChildOutcome::Cancelled),
        text().prop_map(ChildOutcome::Terminated),
        text().prop_map(ChildOutcome::StartFailed),
    ]
}

fn update_outcome() -> impl Strategy<Value = UpdateOutcome> {
    prop_oneof![
        payload().prop_map(UpdateOutcome::Completed),
        text().prop_map(UpdateOutcome::Failed)
    ]
}

/// Every kind of event, with arbitrary fields.
fn event_kind() -> impl Strategy<Value = EventKind> {
    let parent = proptest::option::of((text(), text(), any::<u32>()).prop_map(
        |(workflow_id, run_id, seq)| ParentInfo {
            workflow_id,
            run_id,
            seq,
        },
    ));
    Union::new(vec![
        (
            text(),
            payload(),
            any::<u64>(),
            proptest::option::of(text()),
            parent,
        )
            .prop_map(
                |(workflow_type, input, random_seed, continued_from, parent)| {
                    EventKind::WorkflowStarted {
                        workflow_type,
                        input,
                        random_seed,
                        continued_from,
                        parent,
                        limits: None,
                        repaired_from: None,
                    }
                },
            )
            .boxed(),
        (
            text(),
            payload(),
            proptest::option::of(text()),
            proptest::option::of(any::<i64>()),
        )
            .prop_map(
                |(name, args, signal_id, sent_at)| EventKind::SignalReceived {
                    name,
                    args,
                    signal_id,
                    sent_at,
                },
            )
            .boxed(),
        (text(), text(), payload())
            .prop_map(|(update_id, name, args)| EventKind::UpdateAccepted {
                update_id,
                name,
                args,
            })
            .boxed(),
        (text(), update_outcome())
            .prop_map(|(update_id, outcome)| EventKind::UpdateCompleted { update_id, outcome })
            .boxed(),
        (any::<u32>(), text(), payload(), options())
            .prop_map(|(seq, name, input, options)| EventKind::ActivityScheduled {
                seq,
                name,
                input,
                options,
            })
            .boxed(),
        (any::<u32>(), payload(), any::<u32>())
            .prop_map(|(seq, result, attempts)| EventKind::ActivityCompleted {
                seq,
                result,
                attempts,
            })
            .boxed(),
        (
            any::<u32>(),
            failure(),
            any::<u32>(),
            proptest::option::of(payload()),
        )
            .prop_map(
                |(seq, failure, attempts, last_heartbeat)| EventKind::ActivityFailed {
                    seq,
                    failure,
                    attempts,
                    last_heartbeat,
                },
            )
            .boxed(),
        (
            any::<u32>(),
            timeout(),
            any::<u32>(),
            proptest::option::of(payload()),
        )
            .prop_map(
                |(seq, timeout, attempts, last_heartbeat)| EventKind::ActivityTimedOut {
                    seq,
                    timeout,
                    attempts,
                    last_heartbeat,
                },
            )
            .boxed(),
        (any::<u32>(), any::<i64>())
            .prop_map(|(seq, fire_at_ms)| EventKind::TimerStarted { seq, fire_at_ms })
            .boxed(),
        any::<u32>()
            .prop_map(|seq| EventKind::TimerFired { seq })
            .boxed(),
        any::<u32>()
            .prop_map(|seq| EventKind::TimerCancelled { seq })
            .boxed(),
        (any::<u32>(), text(), payload())
            .prop_map(|(seq, name, value)| EventKind::MarkerRecorded { seq, name, value })
            .boxed(),
        text()
            .prop_map(|reason| EventKind::CancelRequested { reason })
            .boxed(),
        (any::<i64>(), any::<bool>(), proptest::option::of(text()))
            .prop_map(|(task_time_ms, suggest_continue_as_new, build_id)| {
                EventKind::WorkflowTaskCompleted {
                    task_time_ms,
                    suggest_continue_as_new,
                    build_id,
                }
            })
            .boxed(),
        payload()
            .prop_map(|result| EventKind::WorkflowCompleted { result })
            .boxed(),
        text()
            .prop_map(|message| EventKind::WorkflowFailed { message })
            .boxed(),
        (text(), payload())
            .prop_map(|(new_run_id, input)| EventKind::ContinuedAsNew { new_run_id, input })
            .boxed(),
        text()
            .prop_map(|reason| EventKind::WorkflowTerminated { reason })
            .boxed(),
        (
            any::<u32>(),
            text(),
            text(),
            text(),
            payload(),
            policy(),
            proptest::option::of(text()),
        )
            .prop_map(
                |(
                    seq,
                    workflow_id,
                    workflow_type,
                    run_id,
                    input,
                    parent_close_policy,
                    task_queue,
                )| {
                    EventKind::ChildWorkflowStarted {
                        seq,
                        workflow_id,
                        workflow_type,
                        run_id,
                        input,
                        parent_close_policy,
                        task_queue,
                    }
                },
            )
            .boxed(),
        (any::<u32>(), child_outcome())
            .prop_map(|(seq, outcome)| EventKind::ChildWorkflowClosed { seq, outcome })
            .boxed(),
        (
            any::<u32>(),
            text(),
            text(),
            payload(),
            proptest::option::of(text()),
        )
            .prop_map(
                |(seq, workflow_id, name, args, run_id)| EventKind::ExternalSignalSent {
                    seq,
                    workflow_id,
                    name,
                    args,
                    run_id,
                },
            )
            .boxed(),
        any::<u32>()
            .prop_map(|seq| EventKind::ActivityCancelled { seq })
            .boxed(),
        text()
            .prop_map(|reason| EventKind::WorkflowCancelled { reason })
            .boxed(),
        (any::<u32>(), text())
            .prop_map(|(seq, workflow_id)| EventKind::ChildCancelRequested { seq, workflow_id })
            .boxed(),
        (text(), payload())
            .prop_map(|(stream, value)| EventKind::StreamWritten { stream, value })
            .boxed(),
        text()
            .prop_map(|stream| EventKind::StreamClosed { stream })
            .boxed(),
        (text(), payload())
            .prop_map(|(key, value)| EventKind::EventSet { key, value })
            .boxed(),
        (text(), text(), any::<i64>(), any::<bool>())
            .prop_map(|(k1, k2, i, b)| {
                let attributes = [
                    (k1, crate::data::search::SearchValue::Int(i)),
                    (k2, crate::data::search::SearchValue::Bool(b)),
                ]
                .into_iter()
                .collect();
                EventKind::SearchAttributesUpserted { attributes }
            })
            .boxed(),
        (any::<u32>(), text(), local_outcome(), any::<u32>())
            .prop_map(
                |(seq, name, outcome, attempts)| EventKind::LocalActivityCompleted {
                    seq,
                    name,
                    outcome,
                    attempts,
                },
            )
            .boxed(),
    ])
}

/// Every way a local activity's run ends, with arbitrary fields.
fn local_outcome() -> impl Strategy<Value = crate::data::activity::LocalOutcome> {
    use super::activity::LocalOutcome;
    prop_oneof![
        payload().prop_map(LocalOutcome::Completed),
        failure().prop_map(LocalOutcome::Failed),
        Just(LocalOutcome::TimedOut(TimeoutKind::StartToClose)),
        (failure(), any::<u64>())
            .prop_map(|(failure, delay_ms)| LocalOutcome::Backoff { failure, delay_ms }),
    ]
}

/// Every kind of inbox message, with arbitrary fields.
fn message() -> impl Strategy<Value = Message> {
    let resolution = prop_oneof![
        (payload(), any::<u32>())
            .prop_map(|(result, attempts)| ActivityResolution::Completed { result, attempts }),
        (failure(), any::<u32>(), proptest::option::of(payload())).prop_map(
            |(failure, attempts, last_heartbeat)| ActivityResolution::Failed {
                failure,
                attempts,
                last_heartbeat,
            }
        ),
        (timeout(), any::<u32>(), proptest::option::of(payload())).prop_map(
            |(timeout, attempts, last_heartbeat)| ActivityResolution::TimedOut {
                timeout,
                attempts,
                last_heartbeat,
            }
        ),
    ];
    prop_oneof![
        (text(), payload(), proptest::option::of(text()))
            .prop_map(|(name, args, id)| Message::signal(name, args, id)),
        (text(), text(), payload()).prop_map(|(id, name, args)| Message::update(id, name, args)),
        (any::<u32>(), resolution)
            .prop_map(|(seq, resolution)| Message::ActivityResolved { seq, resolution }),
        any::<u32>().prop_map(|seq| Message::TimerFired { seq }),
        text().prop_map(|reason| Message::CancelRequested { reason }),
        (any::<u32>(), child_outcome())
            .prop_map(|(seq, outcome)| Message::ChildClosed { seq, outcome }),
    ]
}

/// Arbitrary MessagePack values, nested a few levels: structures random bytes rarely form.
fn msgpack() -> impl Strategy<Value = rmpv::Value> {
    use rmpv::Value;
    let leaf = prop_oneof![
        Just(Value::Nil),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        any::<f32>().prop_map(Value::from),
        text().prop_map(Value::from),
        vec(any::<u8>(), 0..16).prop_map(Value::Binary),
        (any::<i8>(), vec(any::<u8>(), 0..8)).prop_map(|(t, d)| Value::Ext(t, d)),
    ];
    leaf.prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Value::Array),
            vec((inner.clone(), inner), 0..6).prop_map(Value::Map),
        ]
    })
}

/// Decoded events as ids and stored bytes, to compare bit for bit (a damaged float may decode
/// as a NaN, which equals nothing).
fn as_stored(
    decoded: Result<Vec<HistoryEvent>, PayloadError>,
) -> Result<Vec<(u64, Vec<u8>)>, PayloadError> {
    decoded.map(|events| {
        events
            .iter()
            .map(|e| {
                let mut bytes = Vec::new();
                encode_event_into(&mut bytes, e.time_ms, &e.kind).expect("events encode");
                (e.event_id, bytes)
            })
            .collect()
    })
}

/// Whether `value` holds an extension type anywhere.
fn has_ext(value: &rmpv::Value) -> bool {
    match value {
        rmpv::Value::Ext(..) => true,
        rmpv::Value::Array(items) => items.iter().any(has_ext),
        rmpv::Value::Map(entries) => entries.iter().any(|(k, v)| has_ext(k) || has_ext(v)),
        _ => false,
    }
}

/// One change to an encoding.
#[derive(Debug, Clone)]
enum Mutation {
    Flip(Index, u8),
    Truncate(Index),
    Insert(Index, u8),
    Remove(Index),
    /// Overwrites four bytes with a large length field (`0xff`s), where a decoder that trusts
    /// lengths would allocate gigabytes.
    Lengthen(Index),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<Index>(), 0..8u8).prop_map(|(i, bit)| Mutation::Flip(i, bit)),
        any::<Index>().prop_map(Mutation::Truncate),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        any::<Index>().prop_map(Mutation::Remove),
        any::<Index>().prop_map(Mutation::Lengthen),
    ]
}

fn mutate(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        if bytes.is_empty() {
            break;
        }
        let len = bytes.len();
        match m {
            Mutation::Flip(i, bit) => bytes[i.index(len)] ^= 1 << bit,
            Mutation::Truncate(i) => bytes.truncate(i.index(len)),
            Mutation::Insert(i, b) => bytes.insert(i.index(len + 1), *b),
            Mutation::Remove(i) => {
                bytes.remove(i.index(len));
            }
            Mutation::Lengthen(i) => {
                let at = i.index(len);
                let end = (at + 4).min(len);
                bytes[at..end].fill(0xff);
            }
        }
    }
    bytes
}

fn record(events: &[(i64, EventKind)]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for (time_ms, kind) in events {
        encode_event_into(&mut bytes, *time_ms, kind).expect("events encode");
    }
    bytes
}

/// Decodes `bytes` as every type the engine stores or receives as a payload, and renders it:
/// each must return (a value or an error), whatever the bytes.
fn decode_as_everything(bytes: &[u8]) {
    let p = Payload::unchecked(bytes.to_vec());
    let _ = p.decode::<RunSummary>();
    let _ = p.decode::<UpdateState>();
    let _ = p.decode::<UpdateOutcome>();
    let _ = p.decode::<TaskFailure>();
    let _ = p.decode::<ActivityOptions>();
    let _ = p.decode::<ActivityFailure>();
    let _ = p.decode::<EventKind>();
    let _ = p.decode::<HistoryEvent>();
    let _ = p.decode::<ChildOutcome>();
    let _ = p.decode::<ParentInfo>();
    let _ = p.decode::<Payload>();
    // Argument tuples as handlers decode them.
    let _ = p.decode::<(String,)>();
    let _ = p.decode::<(u32, String, Vec<u8>)>();
    let _ = p.decode::<(Vec<String>, Option<i64>)>();
    let _ = p.decode::<(std::collections::HashMap<String, f64>,)>();
    let _ = p.display();
    let _ = format!("{p:?}");
    let _ = Message::from_bytes(bytes);
}

// ---------------------------------------------------------------------------------------------
// History records

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn fuzz_decode_event_on_arbitrary_bytes(
        bytes in vec(any::<u8>(), 0..256),
        first in any::<u64>(),
    ) {
        let _ = decode_event(first, &bytes);
        let _ = decode_events(first, &bytes);
        // Behind the format version byte, the bytes reach the MessagePack decoder.
        let mut versioned = vec![HISTORY_FORMAT_VERSION];
        versioned.extend_from_slice(&bytes);
        let _ = decode_event(first, &versioned);
        let _ = decode_events(first, &versioned);
    }

    #[test]
    fn fuzz_decode_events_on_mutated_records(
        events in vec((any::<i64>(), event_kind()), 1..5),
        mutations in vec(mutation(), 0..4),
        first in 1..u64::MAX / 2,
    ) {
        let bytes = record(&events);
        let mutated = mutate(bytes.clone(), &mutations);
        if mutated == bytes {
            let decoded = decode_events(first, &bytes).expect("a valid record decodes");
            let expected: Vec<HistoryEvent> = events
                .iter()
                .zip(first..)
                .map(|((time_ms, kind), event_id)| HistoryEvent {
                    event_id,
                    time_ms: *time_ms,
                    kind: kind.clone(),
                })
                .collect();
            prop_assert_eq!(decoded, expected);
        } else if let Ok(decoded) = decode_events(first, &mutated) {
            // Whatever decodes has dense ids from `first`.
            for (event, id) in decoded.iter().zip(first..) {
                prop_assert_eq!(event.event_id, id);
            }
        }
        let _ = decode_event(first, &mutated);
    }

    /// Decoding in place gives what reading each event as a stream gives, errors included:
    /// on valid records, damaged ones, and any MessagePack behind the version byte
    /// (extension types among it).
    #[test]
    fn fuzz_decode_events_in_place_agrees_with_reading(
        events in vec((any::<i64>(), event_kind()), 1..5),
        mutations in vec(mutation(), 0..4),
        value in msgpack(),
        bytes in vec(any::<u8>(), 0..64),
        first in 1..u64::MAX / 2,
    ) {
        let mutated = mutate(record(&events), &mutations);
        prop_assert_eq!(
            as_stored(decode_events(first, &mutated)),
            as_stored(decode_events_by_reading(first, &mutated))
        );
        let mut versioned = vec![HISTORY_FORMAT_VERSION];
        rmpv::encode::write_value(&mut versioned, &value).expect("writing to a Vec cannot fail");
        versioned.extend_from_slice(&bytes);
        prop_assert_eq!(
            as_stored(decode_events(first, &versioned)),
            as_stored(decode_events_by_reading(first, &versioned))
        );
    }

    /// `value_len` finds the extent of any value without an extension type, and refuses one
    /// with an extension type or cut short.
    #[test]
    fn fuzz_value_len_is_the_extent_of_one_value(
        value in msgpack(),
        tail in vec(any::<u8>(), 0..8),
        cut in any::<Index>(),
    ) {
        let mut bytes = Vec::new();
        rmpv::encode::write_value(&mut bytes, &value).expect("writing to a Vec cannot fail");
        let len = bytes.len();
        bytes.extend_from_slice(&tail);
        let expected = (!has_ext(&value)).then_some(len);
        prop_assert_eq!(value_len(&bytes), expected);
        prop_assert_eq!(value_len(&bytes[..cut.index(len)]), None);
    }

    #[test]
    fn fuzz_decode_events_ids_never_overflow(
        n in 1usize..6,
        back in 0u64..8,
    ) {
        let events: Vec<(i64, EventKind)> =
            (0..n).map(|i| (i as i64, EventKind::TimerFired { seq: i as u32 })).collect();
        let first = u64::MAX - back;
        match decode_events(first, &record(&events)) {
            Ok(decoded) => {
                prop_assert!(n as u64 - 1 <= back);
                prop_assert_eq!(decoded.last().map(|e| e.event_id), Some(first + (n as u64 - 1)));
            }
            Err(e) => {
                prop_assert!(n as u64 - 1 > back);
                prop_assert!(e.to_string().contains("event id"), "{}", e);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Payloads of the engine's stored types, and their rendering

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn fuzz_payload_decode_on_arbitrary_bytes(bytes in vec(any::<u8>(), 0..256)) {
        decode_as_everything(&bytes);
    }

    #[test]
    fn fuzz_payload_decode_on_arbitrary_msgpack(value in msgpack()) {
        let mut bytes = Vec::new();
        rmpv::encode::write_value(&mut bytes, &value).expect("writing to a Vec cannot fail");
        decode_as_everything(&bytes);
        // Shallow values render exactly as rmpv prints them.
        prop_assert_eq!(Payload::unchecked(bytes).display(), value.to_string());
    }

    #[test]
    fn fuzz_payload_decode_on_mutated_values(
        kind in event_kind(),
        summary in (vec(text(), 0..3), vec(text(), 0..3), vec((text(), policy()), 0..3)),
        mutations in vec(mutation(), 1..4),
    ) {
        let summary = RunSummary {
            buffered_signals: summary.0,
            running_handlers: summary.1,
            open_children: summary.2,
            cancel_requested: false,
        };
        for bytes in [
            Payload::encode(&kind).expect("events encode").into_bytes(),
            summary.encode().into_bytes(),
            Payload::encode(&UpdateState::Completed(UpdateOutcome::Failed("f".into())))
                .expect("states encode")
                .into_bytes(),
        ] {
            decode_as_everything(&mutate(bytes, &mutations));
        }
    }

    #[test]
    fn fuzz_payload_decode_on_deep_nesting(
        levels in vec(
            prop_oneof![
                Just(&[0x91u8][..]),           // [x]
                Just(&[0xdc, 0, 1][..]),       // [x] as an array16
                Just(&[0x81, 0xc0][..]),       // {nil: x}
                Just(&[0x81, 0xa1, b'x'][..]), // {"x": x}: an unknown field, skipped
            ],
            0..3000,
        ),
        tail in vec(any::<u8>(), 0..8),
    ) {
        let mut bytes: Vec<u8> = levels.concat();
        bytes.push(0xc0);
        bytes.extend_from_slice(&tail);
        decode_as_everything(&bytes);
    }
}

// ---------------------------------------------------------------------------------------------
// Inbox messages

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn fuzz_message_from_bytes_on_arbitrary_bytes(bytes in vec(any::<u8>(), 0..256)) {
        let _ = Message::from_bytes(&bytes);
    }

    #[test]
    fn fuzz_message_from_bytes_on_mutated_messages(
        message in message(),
        mutations in vec(mutation(), 0..4),
    ) {
        let bytes = message.to_bytes().expect("messages encode");
        let mutated = mutate(bytes.clone(), &mutations);
        match Message::from_bytes(&mutated) {
            Ok(decoded) if mutated == bytes => prop_assert_eq!(decoded, message),
            Ok(_) => {}
            Err(e) => prop_assert!(mutated != bytes, "a valid message failed: {}", e),
        }
    }
}
