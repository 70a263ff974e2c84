//! Generated code names nothing from the prelude or the user's imports, and finds wf only
//! through `crate = ".."`. This crate has no implicit prelude and knows wf-sdk only as
//! `wf_renamed` (Cargo refuses a second dependency on one package under another name, so the
//! rename is an `extern crate`, as tarpc's hygiene test does), and `::wf_sdk` names this crate
//! itself, which has no `__private`: a generated path that ignored `crate` would not compile.
#![no_implicit_prelude]
#![deny(warnings)]

extern crate self as wf_sdk;
extern crate wf_sdk as wf_renamed;

#[derive(::wf_renamed::prelude::Serialize, ::wf_renamed::prelude::Deserialize)]
pub struct Item {
    pub name: ::std::string::String,
    pub qty: u32,
}

pub struct Cart {
    owner: ::std::string::String,
    items: ::std::vec::Vec<Item>,
    notes: u32,
    open: bool,
}

#[::wf_renamed::workflow(crate = "::wf_renamed", name = "cart")]
impl Cart {
    #[::wf_renamed::init]
    fn new(owner: &::std::string::String) -> Self {
        Cart {
            owner: ::std::clone::Clone::clone(owner),
            items: ::std::vec::Vec::new(),
            notes: 0,
            open: true,
        }
    }

    #[::wf_renamed::run]
    async fn run(
        ctx: &mut ::wf_renamed::workflow::WorkflowContext<Self>,
        owner: ::std::string::String,
    ) -> ::core::result::Result<u32, ::wf_renamed::error::WorkflowError> {
        ctx.wait_condition(|s| !s.open).await;
        let price = ctx.activity(Tools::price, (owner, 2)).await?;
        ::core::result::Result::Ok(price + ctx.state(|s| s.items.len() as u32))
    }

    #[::wf_renamed::signal]
    fn close(&mut self) {
        self.open = false;
    }

    #[::wf_renamed::signal(name = "note")]
    async fn add_note(ctx: &mut ::wf_renamed::workflow::WorkflowContext<Self>, text: ::std::string::String) {
        let _ = text;
        ctx.state_mut(|s| s.notes += 1);
    }

    #[::wf_renamed::query]
    fn count(&self) -> u32 {
        self.items.len() as u32
    }

    #[::wf_renamed::query]
    fn owner_is(&self, who: ::std::string::String) -> bool {
        self.owner == who
    }

    #[::wf_renamed::update]
    fn add(&mut self, item: Item) -> ::core::result::Result<u32, ::wf_renamed::error::UpdateError> {
        self.items.push(item);
        ::core::result::Result::Ok(self.items.len() as u32)
    }

    #[::wf_renamed::validator(add)]
    fn check_add(&self, item: &Item) -> ::core::result::Result<(), ::wf_renamed::error::Rejection> {
        if item.qty == 0 {
            return ::core::result::Result::Err(::wf_renamed::error::Rejection::new("zero"));
        }
        ::core::result::Result::Ok(())
    }

    #[::wf_renamed::update]
    async fn rename(
        ctx: &mut ::wf_renamed::workflow::WorkflowContext<Self>,
        owner: ::std::string::String,
    ) -> ::core::result::Result<::std::string::String, ::wf_renamed::error::UpdateError> {
        ::core::result::Result::Ok(ctx.state_mut(|s| ::std::mem::replace(&mut s.owner, owner)))
    }
}

pub struct Tools;

#[::wf_renamed::activities(crate = "::wf_renamed")]
impl Tools {
    #[::wf_renamed::activity]
    async fn price(
        &self,
        _ctx: ::wf_renamed::activity::ActivityContext,
        owner: ::std::string::String,
        base: u32,
    ) -> ::core::result::Result<u32, ::wf_renamed::activity::ActivityError> {
        ::core::result::Result::Ok(base + owner.len() as u32)
    }
}

#[allow(dead_code)]
async fn client(
    h: &::wf_renamed::client::WorkflowHandle<Cart>,
) -> ::core::result::Result<(), ::wf_renamed::error::WfError> {
    let tea = Item { name: ::std::string::ToString::to_string("tea"), qty: 1 };
    let n: u32 = h.add(tea).await?;
    let _ = n;
    let _: ::std::string::String = h.rename(::std::string::ToString::to_string("ann")).await?;
    let _: u32 = h.count().await?;
    let _: bool = h.owner_is(::std::string::ToString::to_string("ann")).await?;
    h.add_note(::std::string::ToString::to_string("hi")).signal_id("n-1").await?;
    h.close().await?;
    ::core::result::Result::Ok(())
}

fn main() {
    let _ = client;
    ::core::assert_eq!(<Cart as ::wf_renamed::workflow::WorkflowDefinition>::NAME, "cart");
    ::core::assert_eq!(<Cart as ::wf_renamed::workflow::WorkflowDefinition>::handlers().len(), 6);
}
