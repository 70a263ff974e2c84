// The bench's workflows on Restate: the same shapes as benches/bench.rs.
// Node.js 20 lacks Promise.withResolvers, which this SDK version uses.
Promise.withResolvers ??= function withResolvers() {
  let resolve, reject;
  const promise = new Promise((res, rej) => { resolve = res; reject = rej; });
  return { promise, resolve, reject };
};
const restate = require("@restatedev/restate-sdk");

// (b), (c): a virtual object; `increment` is exclusive (like an update: it checks its input
// first, like a validator, then changes state and returns it); `value` is a shared read.
const counter = restate.object({
  name: "counter",
  handlers: {
    increment: async (ctx, by) => {
      if (typeof by !== "number" || by <= 0) {
        throw new restate.TerminalError("by must be positive");
      }
      const n = ((await ctx.get("n")) ?? 0) + by;
      ctx.set("n", n);
      return n;
    },
    value: restate.handlers.object.shared(async (ctx) => (await ctx.get("n")) ?? 0),
  },
});

// (a): a workflow that waits for a signal (a durable promise) and returns.
const waiter = restate.workflow({
  name: "waiter",
  handlers: {
    run: async (ctx) => ctx.promise("go").get(),
    go: async (ctx) => {
      await ctx.promise("go").resolve(1);
    },
  },
});

// (d): a workflow of n sequential no-op durable steps (Restate's `ctx.run`, its activities).
const chain = restate.workflow({
  name: "chain",
  handlers: {
    run: async (ctx, n) => {
      let last = -1;
      for (let i = 0; i < n; i++) {
        last = await ctx.run("noop", async () => i);
      }
      return last;
    },
  },
});

restate.endpoint().bind(counter).bind(waiter).bind(chain).listen(9080);
