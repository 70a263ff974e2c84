//! Deterministic concurrency inside workflow code: awaiting several futures at once
//! ([`join_all`], [`join_bounded`]) or the first of several ([`select`], [`select_all`]).
//!
//! Replay requires that the code issues the same commands in the same order, so these poll
//! their futures in a fixed order (the order given) every time they are polled, never in the
//! order of wake-ups and never at random: when several are ready in the same workflow task,
//! the first one in that order wins a select. (`futures::select!` picks at random: do not use
//! it in workflow code; `futures::select_biased!` and `futures::join!` are deterministic.)
//! Each poll visits every pending future, which is cheap at the sizes workflows await.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Awaits every future of `futures`, polling them in the order given, and resolves to their
/// outputs in that order. Futures that issue a command on their first poll (an activity, a
/// timer, a child) issue them in that order too, so replay sees the same commands.
///
/// ```ignore
/// let totals = wf_sdk::workflow::join_all(
///     orders.iter().map(|o| ctx.activity(Shop::total, o.clone())),
/// )
/// .await;
/// ```
pub fn join_all<F: Future>(futures: impl IntoIterator<Item = F>) -> JoinAll<F> {
    join_bounded(futures, usize::MAX)
}

/// Like [`join_all`], with at most `limit` futures in flight: the first `limit` are polled at
/// once, and each time one finishes the next one in order starts (in the same poll). Outputs
/// come in the order given. A `limit` of 0 is taken as 1.
///
/// Fan-out of children, ten at a time:
///
/// ```ignore
/// let results = wf_sdk::workflow::join_bounded(
///     (0..100).map(|i| ctx.child::<Worker>(format!("job-{i}"), &i)),
///     10,
/// )
/// .await;
/// ```
pub fn join_bounded<F: Future>(futures: impl IntoIterator<Item = F>, limit: usize) -> JoinAll<F> {
    let slots: Vec<Slot<F>> = futures
        .into_iter()
        .map(|f| Slot::Waiting(Box::pin(f)))
        .collect();
    JoinAll {
        slots,
        limit: limit.max(1),
        started: 0,
        running: 0,
    }
}

enum Slot<F: Future> {
    /// Not admitted yet ([`join_bounded`]'s limit), or admitted and pending.
    Waiting(Pin<Box<F>>),
    Done(F::Output),
    Taken,
}

/// Future of [`join_all`] and [`join_bounded`].
pub struct JoinAll<F: Future> {
    slots: Vec<Slot<F>>,
    limit: usize,
    /// Slots `0..started` have been admitted.
    started: usize,
    /// Admitted and not done.
    running: usize,
}

impl<F: Future> Unpin for JoinAll<F> {}

impl<F: Future> JoinAll<F> {
    /// How many futures are in flight (admitted, not finished): at most the limit.
    pub fn in_flight(&self) -> usize {
        self.running
    }
}

impl<F: Future> Future for JoinAll<F> {
    type Output = Vec<F::Output>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let mut i = 0;
        // In order: admitted ones first, then each newly admitted one in its turn, so a slot
        // freed by slot `i` lets the next one start within this very poll.
        while i < this.slots.len() {
            if i >= this.started {
                if this.running >= this.limit {
                    break;
                }
                this.started += 1;
                this.running += 1;
            }
            if let Slot::Waiting(f) = &mut this.slots[i] {
                if let Poll::Ready(out) = f.as_mut().poll(cx) {
                    this.slots[i] = Slot::Done(out);
                    this.running -= 1;
                    // A freed place: admit the next waiting slot (the loop reaches it).
                }
            }
            i += 1;
        }
        if this.started < this.slots.len() || this.running > 0 {
            return Poll::Pending;
        }
        Poll::Ready(
            this.slots
                .iter_mut()
                .map(|s| match std::mem::replace(s, Slot::Taken) {
                    Slot::Done(out) => out,
                    Slot::Waiting(_) | Slot::Taken => {
                        unreachable!("every slot is done when JoinAll resolves")
                    }
                })
                .collect(),
        )
    }
}

/// Which of two futures finished first ([`select`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Either<A, B> {
    /// The first one, with its output (and the other future, still pending).
    Left(A),
    /// The second one.
    Right(B),
}

/// Awaits the first of `a` and `b` to finish, polling `a` first: when both are ready in the
/// same workflow task, `a` wins. Resolves to the winner's output and the other future, which
/// may still be awaited (or dropped: a dropped activity or timer future is simply no longer
/// waited for). Both must be `Unpin`; wrap others in `Box::pin`.
///
/// ```ignore
/// match wf_sdk::workflow::select(ctx.sleep(Duration::from_secs(60)), ctx.wait_for_signal::<String>("approve")).await {
///     Either::Left((_, _approval)) => "timed out",
///     Either::Right((approved, _timer)) => "approved",
/// }
/// ```
pub fn select<A: Future + Unpin, B: Future + Unpin>(a: A, b: B) -> Select<A, B> {
    Select { pair: Some((a, b)) }
}

/// Future of [`select`].
pub struct Select<A, B> {
    pair: Option<(A, B)>,
}

impl<A: Unpin, B: Unpin> Unpin for Select<A, B> {}

impl<A: Future + Unpin, B: Future + Unpin> Future for Select<A, B> {
    type Output = Either<(A::Output, B), (B::Output, A)>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some((a, b)) = self.pair.as_mut() else {
            panic!("Select polled after it resolved");
        };
        if let Poll::Ready(out) = Pin::new(a).poll(cx) {
            let (_, b) = self.pair.take().expect("checked above");
            return Poll::Ready(Either::Left((out, b)));
        }
        if let Poll::Ready(out) = Pin::new(b).poll(cx) {
            let (a, _) = self.pair.take().expect("checked above");
            return Poll::Ready(Either::Right((out, a)));
        }
        Poll::Pending
    }
}

/// Awaits the first of `futures` to finish, polling them in the order given (the lowest index
/// wins a tie). Resolves to its output, its index, and the others (still pending, in order).
/// The futures must be `Unpin`; wrap others in `Box::pin`. Resolves never for an empty list.
pub fn select_all<F: Future + Unpin>(futures: impl IntoIterator<Item = F>) -> SelectAll<F> {
    SelectAll {
        futures: futures.into_iter().collect(),
    }
}

/// Future of [`select_all`].
pub struct SelectAll<F> {
    futures: Vec<F>,
}

impl<F: Unpin> Unpin for SelectAll<F> {}

impl<F: Future + Unpin> Future for SelectAll<F> {
    type Output = (F::Output, usize, Vec<F>);
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let ready =
            self.futures
                .iter_mut()
                .enumerate()
                .find_map(|(i, f)| match Pin::new(f).poll(cx) {
                    Poll::Ready(out) => Some((i, out)),
                    Poll::Pending => None,
                });
        match ready {
            Some((i, out)) => {
                let mut rest = std::mem::take(&mut self.futures);
                drop(rest.remove(i));
                Poll::Ready((out, i, rest))
            }
            None => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;
    use std::task::Waker;

    /// A future that resolves once its gate is opened, logging each poll by name.
    struct Gate {
        name: &'static str,
        open: Rc<RefCell<Vec<&'static str>>>,
        log: Rc<RefCell<Vec<&'static str>>>,
    }

    impl Future for Gate {
        type Output = &'static str;
        fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<&'static str> {
            self.log.borrow_mut().push(self.name);
            if self.open.borrow().contains(&self.name) {
                Poll::Ready(self.name)
            } else {
                Poll::Pending
            }
        }
    }

    struct Gates {
        open: Rc<RefCell<Vec<&'static str>>>,
        log: Rc<RefCell<Vec<&'static str>>>,
    }

    impl Gates {
        fn new() -> Self {
            Gates {
                open: Rc::default(),
                log: Rc::default(),
            }
        }
        fn gate(&self, name: &'static str) -> Gate {
            Gate {
                name,
                open: self.open.clone(),
                log: self.log.clone(),
            }
        }
        fn open(&self, names: &[&'static str]) {
            self.open.borrow_mut().extend_from_slice(names);
        }
        fn polled(&self) -> Vec<&'static str> {
            std::mem::take(&mut *self.log.borrow_mut())
        }
    }

    fn poll<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
        Pin::new(f).poll(&mut Context::from_waker(Waker::noop()))
    }

    #[test]
    fn join_all_polls_in_order_and_keeps_the_order_of_outputs() {
        let g = Gates::new();
        let mut all = join_all(["a", "b", "c"].map(|n| g.gate(n)));
        assert!(poll(&mut all).is_pending());
        assert_eq!(g.polled(), ["a", "b", "c"]);
        g.open(&["c", "a"]);
        assert!(poll(&mut all).is_pending());
        assert_eq!(g.polled(), ["a", "b", "c"]);
        g.open(&["b"]);
        assert_eq!(poll(&mut all), Poll::Ready(vec!["a", "b", "c"]));
        assert_eq!(g.polled(), ["b"], "finished futures are not polled again");
    }

    #[test]
    fn join_bounded_starts_the_next_in_order_as_soon_as_one_finishes() {
        let g = Gates::new();
        let mut all = join_bounded(["a", "b", "c", "d"].map(|n| g.gate(n)), 2);
        assert!(poll(&mut all).is_pending());
        assert_eq!(g.polled(), ["a", "b"], "two in flight");
        assert_eq!(all.in_flight(), 2);
        g.open(&["b"]);
        assert!(poll(&mut all).is_pending());
        assert_eq!(
            g.polled(),
            ["a", "b", "c"],
            "b's place goes to c in the same poll"
        );
        g.open(&["a", "c", "d"]);
        assert_eq!(poll(&mut all), Poll::Ready(vec!["a", "b", "c", "d"]));
        assert_eq!(g.polled(), ["a", "c", "d"]);
        let mut none = join_bounded(Vec::<Gate>::new(), 0);
        assert_eq!(poll(&mut none), Poll::Ready(vec![]));
    }

    #[test]
    fn select_prefers_the_first_when_both_are_ready() {
        let g = Gates::new();
        let mut s = select(g.gate("a"), g.gate("b"));
        assert!(poll(&mut s).is_pending());
        g.open(&["a", "b"]);
        match poll(&mut s) {
            Poll::Ready(Either::Left((out, rest))) => {
                assert_eq!(out, "a");
                assert_eq!(rest.name, "b");
            }
            _ => panic!("a is polled first and wins"),
        }
        let mut s = select(g.gate("x"), g.gate("b"));
        assert!(matches!(poll(&mut s), Poll::Ready(Either::Right(("b", _)))));
    }

    #[test]
    fn select_all_gives_the_lowest_ready_index_and_the_rest_in_order() {
        let g = Gates::new();
        let mut s = select_all(["a", "b", "c"].map(|n| g.gate(n)));
        assert!(poll(&mut s).is_pending());
        g.open(&["c", "b"]);
        let Poll::Ready((out, i, rest)) = poll(&mut s) else {
            panic!("b and c are ready");
        };
        assert_eq!((out, i), ("b", 1));
        assert_eq!(rest.iter().map(|g| g.name).collect::<Vec<_>>(), ["a", "c"]);
    }
}
