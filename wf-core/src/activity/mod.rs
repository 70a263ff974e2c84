//! Activities: the side-effecting work a workflow schedules, run outside the deterministic
//! executor with retries and timeouts. Their definitions (`#[activities]` implements
//! [`ActivityGroup`]), the table of invokers an engine runs them from (`group.rs`, `ActivityRegistry`), the context an attempt receives
//! (with its task token for asynchronous completion, `completion.rs`), and the typing that
//! makes `ctx.activity(Tools::next_step, goal)` check argument and result types at compile
//! time.
//!
//! May import: `data`, `error`.

mod completion;
mod context;
mod group;
mod stream;
mod typing;

pub(crate) use context::HeartbeatSink;
pub use context::{ActivityContext, ActivityInfo};
pub use group::{type_id_of_val, ActivityGroup, ActivityInvoker, ActivityRegistry, BoxFuture};
pub use stream::ActivityStream;
pub use typing::ActivityFn;
