//! Updates: sync and async, with and without a validator, renamed, abandoned, no value.
#![deny(warnings)]

use wf_sdk::prelude::*;

#[derive(Serialize, Deserialize, Clone)]
pub struct Item {
    pub name: String,
    pub qty: u32,
}

#[derive(Default)]
pub struct Cart {
    items: Vec<Item>,
    goal: String,
}

#[workflow]
impl Cart {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<u32, WorkflowError> {
        ctx.wait_condition(|s| s.items.len() > 2).await;
        Ok(ctx.state(|s| s.items.iter().map(|i| i.qty).sum()))
    }

    /// Adds an item; returns how many there are.
    #[update]
    fn add(&mut self, item: Item) -> Result<u32, UpdateError> {
        self.items.push(item);
        Ok(self.items.len() as u32)
    }

    #[validator(add)]
    fn validate_add(&self, item: &Item) -> Result<(), Rejection> {
        if item.qty == 0 {
            return Err(Rejection::new("quantity must be positive"));
        }
        Ok(())
    }

    #[update(name = "clear_all")]
    fn clear(&mut self) -> Result<(), UpdateError> {
        self.items.clear();
        Ok(())
    }

    #[update]
    async fn change_goal(ctx: &mut WorkflowContext<Self>, goal: String) -> Result<String, UpdateError> {
        let previous = ctx.state_mut(|s| std::mem::replace(&mut s.goal, goal));
        Ok(previous)
    }

    #[validator(change_goal)]
    fn validate_goal(&self, goal: &String) -> Result<(), Rejection> {
        if goal == &self.goal { Err(Rejection::new("same goal")) } else { Ok(()) }
    }

    #[update(unfinished = "abandon")]
    async fn set_qty(ctx: &WorkflowContext<Self>, index: usize, qty: u32) -> Result<Option<Item>, UpdateError> {
        Ok(ctx.state_mut(|s| {
            let item = s.items.get_mut(index)?;
            item.qty = qty;
            Some(item.clone())
        }))
    }

    #[validator(set_qty)]
    fn validate_qty(&self, index: &usize, qty: &u32) -> Result<(), Rejection> {
        if *index >= self.items.len() || *qty == 0 {
            return Err(Rejection::new("no such item, or zero quantity"));
        }
        Ok(())
    }
}

#[allow(dead_code)]
async fn client(h: &WorkflowHandle<Cart>) -> Result<(), WfError> {
    let n: u32 = h.add(Item { name: "tea".into(), qty: 1 }).await?;
    let _ = n;
    h.clear().await?;
    let _: String = h.change_goal("x".into()).update_id("u1").await?;
    let _: Option<Item> = h.set_qty(0, 3).await?;
    Ok(())
}

fn main() {
    use wf_sdk::__private::HandlerKind;
    let handlers = <Cart as wf_sdk::workflow::WorkflowDefinition>::handlers();
    let shape: Vec<(&str, &str, bool)> = handlers
        .iter()
        .map(|h| match &h.kind {
            HandlerKind::SyncUpdate { validator, .. } => (h.name, "sync", validator.is_some()),
            HandlerKind::AsyncUpdate { validator, .. } => (h.name, "async", validator.is_some()),
            _ => (h.name, "other", false),
        })
        .collect();
    assert_eq!(
        shape,
        [("add", "sync", true), ("clear_all", "sync", false), ("change_goal", "async", true), ("set_qty", "async", true)]
    );
    let mut cart = Cart::default();
    assert_eq!(cart.add(Item { name: "tea".into(), qty: 2 }).unwrap(), 1);
    assert!(cart.validate_add(&Item { name: "x".into(), qty: 0 }).is_err());
}
