//! Generated code names these as `<crate>::__private::Item`, where `<crate>` is `::wf_sdk`
//! unless `#[workflow(crate = "..")]` or `#[activities(crate = "..")]` names another path. It
//! spells every item it uses through here (or `::core`), never through the prelude or the
//! user's imports, so it compiles under `#![no_implicit_prelude]`. This module holds exactly
//! what `wf-macros` names; the ui-tests compile the generated code, so an item missing here
//! fails them.
//!
//! The client methods build their calls through `signal_call`, `query_call` and
//! `update_call`, not through methods of `WorkflowHandle`, so that the handle shows users no
//! hidden method.

pub use std::any::TypeId;
pub use std::boxed::Box;
pub use std::clone::Clone;
pub use std::default::Default;
pub use std::option::Option::{self, None, Some};
pub use std::result::Result::{self, Ok};
pub use std::string::String;
pub use std::sync::Arc;
pub use std::vec::Vec;
pub use wf_core::client::{query_call, signal_call, update_call};
pub use wf_core::{
    child_signal, encode_update_result, type_id_of_val, ActivityContext, ActivityError,
    ActivityGroup, ActivityRegistry, BoxFuture, ChildHandle, DynamicHandlers, DynamicInput,
    DynamicSignal, DynamicSignalKind, DynamicUpdate, DynamicUpdateKind, Handler, HandlerKind,
    LocalBoxFuture, Param, Payload, PayloadError, QueryCall, Rejection, SignalCall,
    SignalExternalError, Unfinished, UpdateCall, UpdateError, WorkflowContext, WorkflowDefinition,
    WorkflowError, WorkflowHandle,
};
