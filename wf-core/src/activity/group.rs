//! Activity groups and the table of invokers an engine runs them from (`ActivityRegistry`): `#[activities]` implements
//! [`ActivityGroup`] for a struct, and each `#[activity]` method becomes an invoker under its
//! wire name.

use super::context::ActivityContext;
use crate::data::payload::Payload;
use crate::error::ActivityError;
use std::any::TypeId;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A `Send` boxed future (activities run on the tokio runtime).
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Runs one activity attempt: decodes the input, calls the method, encodes the result.
pub type ActivityInvoker = Arc<
    dyn Fn(ActivityContext, Payload) -> BoxFuture<Result<Payload, ActivityError>> + Send + Sync,
>;

/// A struct whose `#[activity]` methods are activities. Implemented by `#[activities]`.
pub trait ActivityGroup: Send + Sync + 'static {
    /// The wire name of the method whose fn-item type is `f`, if it is an `#[activity]`.
    fn activity_name(f: TypeId) -> Option<&'static str>
    where
        Self: Sized;

    /// Adds one invoker per activity to the table.
    fn register(self: Arc<Self>, registry: &mut ActivityRegistry);
}

/// Activities by wire name, as one engine runs them.
#[derive(Default, Clone)]
pub struct ActivityRegistry {
    invokers: HashMap<&'static str, ActivityInvoker>,
}

impl ActivityRegistry {
    /// Registers `invoker` under `name` (a later registration of the same name replaces it).
    pub fn add(&mut self, name: &'static str, invoker: ActivityInvoker) {
        self.invokers.insert(name, invoker);
    }

    /// The invoker for `name`.
    pub fn get(&self, name: &str) -> Option<&ActivityInvoker> {
        self.invokers.get(name)
    }

    /// Registered names.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.invokers.keys().copied()
    }
}

/// The `TypeId` of a value's type; `#[activities]` uses it to map a method to its wire name.
pub fn type_id_of_val<F: 'static>(_: &F) -> TypeId {
    TypeId::of::<F>()
}
