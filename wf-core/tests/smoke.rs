//! A hand-written workflow definition driven through the engine (the macros generate the same).

use std::sync::Arc;
use std::time::Duration;
use wf_core::*;

#[derive(Default)]
struct Agent {
    goal: String,
    paused: bool,
    step: u32,
    stop: bool,
}

impl Agent {
    async fn run(ctx: &mut WorkflowContext<Self>, _input: String) -> Result<String, WorkflowError> {
        loop {
            ctx.wait_condition(|s| !s.paused || s.stop).await;
            if ctx.state(|s| s.stop) {
                break;
            }
            let goal = ctx.state(|s| s.goal.clone());
            let n: u32 = ctx.activity(Tools::next_step, goal).await?;
            ctx.state_mut(|s| s.step = n);
            if n >= 3 {
                ctx.state_mut(|s| s.paused = true);
            }
        }
        ctx.handlers_drained().await;
        Ok(ctx.state(|s| format!("stopped at {}", s.step)))
    }
}

fn unit_args(p: &Payload) -> Result<(), PayloadError> {
    p.decode::<()>()
}

impl WorkflowDefinition for Agent {
    const NAME: &'static str = "agent";
    type Input = String;
    type Output = String;

    fn init_state(input: &String) -> Self {
        Agent {
            goal: input.clone(),
            ..Default::default()
        }
    }

    fn start_run(
        ctx: WorkflowContext<Self>,
        input: String,
    ) -> LocalBoxFuture<Result<String, WorkflowError>> {
        Box::pin(async move {
            let mut ctx = ctx;
            Agent::run(&mut ctx, input).await
        })
    }

    fn handlers() -> Vec<Handler<Self>> {
        vec![
            Handler {
                name: "pause",
                check_args: unit_args,
                params: &[],
                returns: "()",
                kind: HandlerKind::SyncSignal(|s, p| {
                    p.decode::<()>()?;
                    s.paused = true;
                    Ok(())
                }),
                unfinished: Unfinished::Warn,
            },
            Handler {
                name: "stop",
                check_args: unit_args,
                params: &[],
                returns: "()",
                kind: HandlerKind::SyncSignal(|s, p| {
                    p.decode::<()>()?;
                    s.stop = true;
                    Ok(())
                }),
                unfinished: Unfinished::Warn,
            },
            Handler {
                name: "step",
                check_args: unit_args,
                params: &[],
                returns: "u32",
                kind: HandlerKind::Query(|s, p| {
                    p.decode::<()>()?;
                    Payload::encode(&s.step)
                }),
                unfinished: Unfinished::Warn,
            },
            Handler {
                name: "change_goal",
                check_args: |p| p.decode::<(String,)>().map(|_| ()),
                params: &[Param {
                    name: "goal",
                    ty: "String",
                }],
                returns: "String",
                kind: HandlerKind::AsyncUpdate {
                    handler: |ctx, p| {
                        let (goal,): (String,) = p.decode()?;
                        Ok(Box::pin(async move {
                            ctx.sleep(Duration::from_millis(1)).await?;
                            ctx.state_mut(|s| s.goal = goal.clone());
                            encode_update_result(Ok::<_, UpdateError>(goal))
                        }))
                    },
                    validator: Some(|_s, p| {
                        let (goal,): (String,) = p.decode()?;
                        Ok(if goal.is_empty() {
                            Err(Rejection::new("goal must not be empty"))
                        } else {
                            Ok(())
                        })
                    }),
                },
                unfinished: Unfinished::Warn,
            },
        ]
    }
}

struct Tools;

impl Tools {
    async fn next_step(&self, ctx: ActivityContext, _goal: String) -> Result<u32, ActivityError> {
        Ok(ctx.info().seq)
    }
}

impl ActivityGroup for Tools {
    fn activity_name(f: std::any::TypeId) -> Option<&'static str> {
        (f == type_id_of_val(&Tools::next_step)).then_some("next_step")
    }

    fn register(self: Arc<Self>, registry: &mut ActivityRegistry) {
        let this = self.clone();
        registry.add(
            "next_step",
            Arc::new(move |ctx, input| {
                let this = this.clone();
                Box::pin(async move {
                    let goal: String = input.decode()?;
                    let r = this.next_step(ctx, goal).await?;
                    Ok(Payload::encode(&r)?)
                })
            }),
        );
    }
}

#[tokio::test]
async fn hand_written_workflow_runs_end_to_end() {
    let engine = Engine::builder()
        .memory()
        .workflow::<Agent>()
        .activities(Tools)
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let h = client
        .start::<Agent>("a-1", "ship".to_string())
        .await
        .unwrap();
    // Without the macros, handlers are called by wire name with encoded argument tuples.
    let unit = || Payload::encode(&()).unwrap();
    let step = || async {
        let step = client.query_raw("a-1", "step", unit()).await.unwrap();
        step.decode::<u32>().unwrap()
    };
    // Wait until paused at step 3.
    for _ in 0..200 {
        if step().await >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(step().await, 3);
    let update = |goal: &str| {
        let args = Payload::encode(&(goal.to_string(),)).unwrap();
        client.update_raw("a-1", "change_goal", args, None, UpdateStage::Completed)
    };
    let err = update("").await.unwrap_err();
    assert_eq!(err, WfError::Rejected("goal must not be empty".into()));
    let (_, g) = update("tests").await.unwrap();
    assert_eq!(g.decode::<String>().unwrap(), "tests");
    client
        .signal_raw("a-1", "stop", unit(), None)
        .await
        .unwrap();
    assert_eq!(h.result().await.unwrap(), "stopped at 3");
    let history = h.history().await.unwrap();
    let kinds: Vec<&str> = history.iter().map(|e| e.kind.name()).collect();
    assert_eq!(kinds.first(), Some(&"WorkflowStarted"));
    assert_eq!(kinds.last(), Some(&"WorkflowTaskCompleted"));
    assert!(kinds.contains(&"WorkflowCompleted"));
    assert!(!history.iter().any(|e| matches!(&e.kind, EventKind::UpdateAccepted { args, .. } if args.decode::<(String,)>().unwrap().0.is_empty())));
    for e in &history {
        println!(
            "{:>3} {:<22} {}",
            e.event_id,
            e.kind.name(),
            e.kind.details()
        );
    }
}
