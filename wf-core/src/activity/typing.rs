//! The typing of `ctx.activity(Tools::next_step, goal)`: the method itself says its group,
//! argument and result types, so a call with the wrong argument or result does not compile.

use super::context::ActivityContext;
use super::group::ActivityGroup;
use crate::error::ActivityError;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// The typing of an activity method, inferred from the method itself: its group, argument and
/// result types. `M` is an inference marker; users never name it.
///
/// One argument is sent as itself; none as `()`; several as a tuple.
pub trait ActivityFn<M>: 'static {
    /// The `#[activities]` type the method belongs to.
    type Group: ActivityGroup;
    /// What the workflow passes.
    type Args: Serialize;
    /// What the activity returns on success.
    type Output: DeserializeOwned;
}

macro_rules! activity_fn_impl {
    ($args:ty; $($a:ident),*) => {
        impl<T, R, F, $($a,)*> ActivityFn<(T, ($($a,)*), R)> for F
        where
            F: AsyncFn(&T, ActivityContext, $($a),*) -> Result<R, ActivityError> + 'static,
            T: ActivityGroup,
            R: Serialize + DeserializeOwned,
            $($a: Serialize,)*
        {
            type Group = T;
            type Args = $args;
            type Output = R;
        }
    };
}

activity_fn_impl!((); );
activity_fn_impl!(A; A);
activity_fn_impl!((A, B); A, B);
activity_fn_impl!((A, B, C); A, B, C);
activity_fn_impl!((A, B, C, D); A, B, C, D);
activity_fn_impl!((A, B, C, D, E); A, B, C, D, E);
