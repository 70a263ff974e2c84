//! Bad input is refused at the client with a typed error, and nothing is written.

mod common;
use common::*;
use wf_sdk::prelude::*;
use wf_sdk::{
    client::{ListFilter, StartOptions, UpdateStage},
    payload::{Payload, PayloadError},
};

#[derive(Default)]
pub struct Strict {
    items: Vec<String>,
}

#[workflow]
impl Strict {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, _limit: u32) -> Result<(), WorkflowError> {
        ctx.wait_condition(|s| s.items.len() > 100).await;
        Ok(())
    }

    #[signal]
    fn add(&mut self, item: String) {
        self.items.push(item);
    }

    #[update]
    fn put(&mut self, item: String, copies: u8) -> Result<usize, UpdateError> {
        for _ in 0..copies {
            self.items.push(item.clone());
        }
        Ok(self.items.len())
    }

    #[query]
    fn count(&self) -> usize {
        self.items.len()
    }
}

fn too_large() -> String {
    "x".repeat(wf_sdk::limits::MAX_PAYLOAD_BYTES + 1)
}

async fn bad_input_is_refused_and_changes_nothing(backend: Backend) {
    let engine = builder(backend, "bad-input")
        .workflow::<Strict>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let h = client.start::<Strict>("s", 3).await.unwrap();
    h.add("ok".into()).await.unwrap();
    eventually("the first signal", || async {
        (h.count().await.ok()? == 1).then_some(())
    })
    .await;
    let before = h.history().await.unwrap();

    // Undecodable bytes.
    let garbage = Payload::from_bytes(vec![0xc1, 0xff, 0x00]).unwrap();
    let err = client
        .signal_raw("s", "add", garbage.clone(), None)
        .await
        .unwrap_err();
    assert!(
        matches!(err, WfError::PayloadError(PayloadError::Decode { .. })),
        "{err:?}"
    );
    // Wrong arity: `put` takes (String, u8).
    let one_arg = Payload::encode(&("a",)).unwrap();
    let err = client
        .update_raw("s", "put", one_arg, None, UpdateStage::Completed)
        .await
        .unwrap_err();
    assert!(
        matches!(err, WfError::PayloadError(PayloadError::Decode { .. })),
        "{err:?}"
    );
    // Wrong type.
    let wrong = Payload::encode(&(1u32,)).unwrap();
    assert!(matches!(
        client.signal_raw("s", "add", wrong, None).await,
        Err(WfError::PayloadError(PayloadError::Decode { .. }))
    ));
    // Over 2 MiB, typed and raw.
    assert!(matches!(
        h.add(too_large()).await,
        Err(WfError::PayloadError(PayloadError::TooLarge { .. }))
    ));
    assert!(matches!(
        Payload::from_bytes(vec![0; wf_sdk::limits::MAX_PAYLOAD_BYTES + 1]),
        Err(PayloadError::TooLarge { .. })
    ));
    // Unknown handler names (a signal with no handler is kept instead: see signals_queries).
    let unit = Payload::encode(&()).unwrap();
    assert!(matches!(
        client
            .update_raw("s", "nope", unit.clone(), None, UpdateStage::Completed)
            .await,
        Err(WfError::Unknown { kind: "update", .. })
    ));
    assert!(matches!(
        client.query_raw("s", "nope", unit.clone()).await,
        Err(WfError::QueryError(_))
    ));
    assert!(matches!(
        client.query_raw("s", "count", garbage).await,
        Err(WfError::PayloadError(_))
    ));
    // Unknown workflow id and type; undecodable start input.
    assert!(matches!(
        client.signal_raw("ghost", "add", unit.clone(), None).await,
        Err(WfError::NotFound { .. })
    ));
    assert!(matches!(
        client
            .start_raw("t", "NoSuchType", unit.clone(), StartOptions::default())
            .await,
        Err(WfError::Unknown {
            kind: "workflow type",
            ..
        })
    ));
    assert!(matches!(
        client
            .start_raw(
                "t",
                "Strict",
                Payload::encode(&"not a u32").unwrap(),
                StartOptions::default()
            )
            .await,
        Err(WfError::PayloadError(PayloadError::Decode { .. }))
    ));
    assert!(matches!(
        client.start::<Strict>("", 1).await,
        Err(WfError::InvalidArgument(_))
    ));

    assert_eq!(h.history().await.unwrap(), before, "nothing was written");
    assert_eq!(
        client.list(ListFilter::default()).await.unwrap().len(),
        1,
        "no run was created"
    );
    assert_eq!(h.count().await.unwrap(), 1);
}

both!(bad_input_is_refused_and_changes_nothing);
