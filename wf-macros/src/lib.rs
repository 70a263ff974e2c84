//! Procedural macros for wf: `#[workflow]` and `#[activities]`, with the role attributes that
//! mark methods inside them. Use them through `wf_sdk` (`use wf_sdk::prelude::*;`), which
//! provides the types the generated code names.
//!
//! Layout: `attr.rs` parses attribute arguments, `ast.rs` builds typed views of the impl
//! block, `check.rs` holds the rules, `expand.rs` and `client.rs` generate code, and
//! `fallback.rs` is what is emitted after an error. Errors are collected in a context (`ctxt.rs`) so that
//! independent mistakes are all reported, each once. `hygiene.rs` holds how generated code
//! names things: wf's items through one private path (`::wf_sdk::__private`, or
//! `<crate>::__private` with `crate = ".."`), never the prelude, and its own variables with
//! mixed-site hygiene, so the expansion cannot collide with the user's names.

#![warn(missing_docs)]

mod ast;
mod attr;
mod check;
mod child_handle;
mod client;
mod ctxt;
mod dynamic;
mod dynamic_workflow;
mod expand;
mod fallback;
mod hygiene;
mod init_state;
mod receiver;
mod spans;
mod standalone;
mod ty;

use proc_macro::TokenStream;

/// Makes a struct a durable workflow. Goes on the struct's own `impl` block.
///
/// Inside the block, mark the methods by role:
///
/// | attribute | form |
/// |---|---|
/// | `#[init]` (optional; else `Default`) | `fn new(input: &Input) -> Self` or `fn new() -> Self` |
/// | `#[run]` (exactly one) | `async fn run(ctx: &mut WorkflowContext<Self>, input: Input) -> Result<Output, WorkflowError>`; the input is optional |
/// | `#[signal]` | `fn x(&mut self, ..)`, or `async fn x(ctx: &mut WorkflowContext<Self>, ..)` |
/// | `#[query]` | `fn x(&self, ..) -> T` |
/// | `#[update]` | `fn x(&mut self, ..) -> Result<T, UpdateError>`, or `async fn x(ctx: &mut WorkflowContext<Self>, ..) -> Result<T, UpdateError>` |
/// | `#[validator(update)]` | `fn x(&self, a: &A, ..) -> Result<(), Rejection>`, borrowing the update's arguments |
///
/// Catch-all handlers: `#[signal(dynamic)] fn x(&mut self, name: String, args: Payload)` (or
/// async, taking `ctx`), `#[query(dynamic)] fn x(&self, name: String, args: Payload) -> T`,
/// `#[update(dynamic)]` (as `#[update]`, with `name: String, args: Payload`) and
/// `#[validator(dynamic)] fn x(&self, name: &str, args: &Payload) -> Result<(), Rejection>`,
/// at most one of each. They take the messages no named handler takes, with the message's
/// name and its encoded argument tuple (`args.decode::<(A, B)>()`); they have no wire name
/// and no generated client method (clients use `signal_raw`, `query_raw`, `update_raw`).
///
/// A dynamic workflow type: `#[workflow(dynamic)]` makes the type run every workflow type
/// name no other registration of the engine has. Its `#[run]` is `async fn run(ctx: &mut
/// WorkflowContext<Self>, name: String, input: Payload) -> Result<Output, WorkflowError>` (the
/// run's type name and its raw input, decoded with `input.decode::<T>()`), its `#[init]`
/// (optional) `fn new(name: &str, input: &Payload) -> Self` or `fn new() -> Self`; its input
/// type is `DynamicInput` (for `ctx.continue_as_new`). Clients start its runs by type name
/// (`client.start_untyped("invoice", id, &input)`); an engine registers at most one.
///
/// Async methods take no `self`: they reach the state through `ctx.state(|s| ..)` and
/// `ctx.state_mut(|s| ..)`, so no borrow of it can live across an `.await`. Arguments and
/// return values cross the wire (MessagePack), so their types implement `Serialize` and
/// `Deserialize`. The methods keep their names and stay callable, e.g. in unit tests.
///
/// Keys: `#[workflow(name = "..")]` sets the workflow's wire name (default: the type's name);
/// `#[workflow(crate = "::my_wf")]` is for a crate that depends on `wf-sdk` under another name
/// (as serde's `#[serde(crate = "..")]`): the generated code then reaches wf through
/// `::my_wf::__private` instead of `::wf_sdk::__private`, and role attributes may be written
/// `#[my_wf::signal]`. The value is a path in a string. `#[signal(name = "..", unfinished =
/// "abandon")]`, `#[update(name = "..", unfinished = "abandon")]` and `#[query(name = "..")]`
/// set a handler's wire name, and whether the engine stays silent (`"abandon"`) instead of
/// warning (`"warn"`, the default) when the run finishes while the handler is still running.
///
/// The generated code names nothing from the prelude or from the user's imports, so it
/// compiles under `#![no_implicit_prelude]`, next to items of any name.
///
/// The macro implements `WorkflowDefinition` for the type and generates a trait
/// `<Type>Client` (here `AgentRunClient`), implemented for `WorkflowHandle<Type>`, with one
/// method per signal, query and update, taking the handler's arguments by value.
///
/// ```ignore
/// use wf_sdk::prelude::*;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// pub struct AgentInput { pub goal: String }
///
/// #[derive(Default)]
/// pub struct AgentRun { goal: String, step: u32, paused: bool }
///
/// #[workflow(name = "agent_run")]
/// impl AgentRun {
///     #[init]
///     fn new(input: &AgentInput) -> Self {
///         AgentRun { goal: input.goal.clone(), ..Default::default() }
///     }
///
///     #[run]
///     async fn run(ctx: &mut WorkflowContext<Self>, input: AgentInput) -> Result<String, WorkflowError> {
///         ctx.wait_condition(|s| !s.paused).await;
///         Ok(ctx.state(|s| format!("{} after {} steps", s.goal, s.step)))
///     }
///
///     /// Stops the agent before its next step.
///     #[signal]
///     fn pause(&mut self) { self.paused = true; }
///
///     #[query]
///     fn step(&self) -> u32 { self.step }
///
///     #[update]
///     async fn change_goal(ctx: &mut WorkflowContext<Self>, goal: String) -> Result<String, UpdateError> {
///         ctx.state_mut(|s| s.goal = goal.clone());
///         Ok(goal)
///     }
///
///     #[validator(change_goal)]
///     fn validate_goal(&self, goal: &String) -> Result<(), Rejection> {
///         if goal.is_empty() { Err(Rejection::new("the goal is empty")) } else { Ok(()) }
///     }
/// }
///
/// // On the client side:
/// async fn steer(h: &WorkflowHandle<AgentRun>) -> Result<(), WfError> {
///     h.pause().await?;                                   // from the generated `AgentRunClient`
///     let step: u32 = h.step().await?;
///     let goal: String = h.change_goal("tests first".into()).await?;
///     println!("step {step}, goal {goal}");
///     Ok(())
/// }
/// ```
#[proc_macro_attribute]
pub fn workflow(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::workflow(args.into(), input.into()).into()
}

/// Makes the `#[activity]` methods of a type available to workers, as one activity group.
///
/// Each activity is `async fn x(&self, ctx: ActivityContext, ..) -> Result<T, ActivityError>`;
/// the struct carries the activities' dependencies (clients, pools) and is shared by all of
/// them. `#[activity(name = "..")]` sets an activity's wire name (default: the method's
/// name). Workflows call an activity by its method: `ctx.activity(Tools::next_step, goal)`.
/// The methods stay as written. `#[activities(crate = "::my_wf")]` names wf's crate when it
/// is renamed, as for [`#[workflow]`](macro@workflow).
///
/// ```ignore
/// use wf_sdk::prelude::*;
///
/// pub struct Tools { http: HttpClient }
///
/// #[activities]
/// impl Tools {
///     #[activity]
///     async fn next_step(&self, ctx: ActivityContext, goal: String) -> Result<(), ActivityError> {
///         self.http.post(&goal).await.map_err(|e| ActivityError::retryable(e.to_string()))
///     }
///
///     #[activity(name = "add")]
///     async fn sum(&self, _ctx: ActivityContext, a: u32, b: u32) -> Result<u32, ActivityError> {
///         Ok(a + b)
///     }
/// }
/// ```
#[proc_macro_attribute]
pub fn activities(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::activities(args.into(), input.into()).into()
}

/// Marks the optional constructor of a workflow's state, inside a [`#[workflow]`](macro@workflow)
/// impl block; without one, the state starts as `Default::default()`.
///
/// ```ignore
/// #[init]
/// fn new(input: &AgentInput) -> Self { AgentRun { goal: input.goal.clone(), ..Default::default() } }
/// ```
///
/// Outside a `#[workflow]` impl block this attribute is an error.
#[proc_macro_attribute]
pub fn init(_args: TokenStream, item: TokenStream) -> TokenStream {
    standalone::misplaced("init", item.into()).into()
}

/// Marks a workflow's main method, inside a [`#[workflow]`](macro@workflow) impl block.
///
/// ```ignore
/// #[run]
/// async fn run(ctx: &mut WorkflowContext<Self>, input: AgentInput) -> Result<String, WorkflowError> {
///     Ok(input.goal)
/// }
/// ```
///
/// Outside a `#[workflow]` impl block this attribute is an error.
#[proc_macro_attribute]
pub fn run(_args: TokenStream, item: TokenStream) -> TokenStream {
    standalone::misplaced("run", item.into()).into()
}

/// Marks a signal handler, inside a [`#[workflow]`](macro@workflow) impl block. Sync handlers
/// take `&mut self` and run atomically; async ones take the context.
///
/// ```ignore
/// #[signal]
/// fn pause(&mut self) { self.paused = true; }
///
/// #[signal(name = "note", unfinished = "abandon")]
/// async fn add_note(ctx: &mut WorkflowContext<Self>, text: String) {
///     ctx.state_mut(|s| s.notes.push(text));
/// }
/// ```
///
/// Outside a `#[workflow]` impl block this attribute is an error.
#[proc_macro_attribute]
pub fn signal(_args: TokenStream, item: TokenStream) -> TokenStream {
    standalone::misplaced("signal", item.into()).into()
}

/// Marks a query handler, inside a [`#[workflow]`](macro@workflow) impl block: a sync method
/// that reads the state.
///
/// ```ignore
/// #[query]
/// fn notes_since(&self, index: usize) -> Vec<String> { self.notes[index..].to_vec() }
/// ```
///
/// Outside a `#[workflow]` impl block this attribute is an error.
#[proc_macro_attribute]
pub fn query(_args: TokenStream, item: TokenStream) -> TokenStream {
    standalone::misplaced("query", item.into()).into()
}

/// Marks an update handler, inside a [`#[workflow]`](macro@workflow) impl block. The caller
/// gets its `Ok` value, or its `UpdateError`.
///
/// ```ignore
/// #[update]
/// fn add(&mut self, item: Item) -> Result<u32, UpdateError> {
///     self.items.push(item);
///     Ok(self.items.len() as u32)
/// }
/// ```
///
/// Outside a `#[workflow]` impl block this attribute is an error.
#[proc_macro_attribute]
pub fn update(_args: TokenStream, item: TokenStream) -> TokenStream {
    standalone::misplaced("update", item.into()).into()
}

/// Marks the validator of an update, inside a [`#[workflow]`](macro@workflow) impl block. It
/// borrows the update's arguments; its `Err` rejects the update before anything is recorded.
///
/// ```ignore
/// #[validator(change_goal)]
/// fn validate_goal(&self, goal: &String) -> Result<(), Rejection> {
///     if goal.is_empty() { Err(Rejection::new("the goal is empty")) } else { Ok(()) }
/// }
/// ```
///
/// Outside a `#[workflow]` impl block this attribute is an error.
#[proc_macro_attribute]
pub fn validator(_args: TokenStream, item: TokenStream) -> TokenStream {
    standalone::misplaced("validator", item.into()).into()
}

/// Marks an activity, inside an [`#[activities]`](macro@activities) impl block.
///
/// ```ignore
/// #[activity(name = "fetch")]
/// async fn fetch_page(&self, ctx: ActivityContext, url: String) -> Result<String, ActivityError> {
///     self.http.get(&url).await.map_err(|e| ActivityError::retryable(e.to_string()))
/// }
/// ```
///
/// Outside an `#[activities]` impl block this attribute is an error.
#[proc_macro_attribute]
pub fn activity(_args: TokenStream, item: TokenStream) -> TokenStream {
    standalone::misplaced("activity", item.into()).into()
}
