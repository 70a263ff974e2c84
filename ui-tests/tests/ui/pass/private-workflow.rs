//! A private workflow type whose handlers take and return private types: the generated
//! public client trait must not warn about private types in its interface.
#![deny(warnings)]

mod inner {
    use wf_sdk::prelude::*;

    #[derive(Serialize, Deserialize)]
    struct Secret(u32);

    #[derive(Default)]
    struct Vault {
        secrets: Vec<Secret>,
    }

    #[workflow]
    impl Vault {
        #[run]
        async fn run(ctx: &mut WorkflowContext<Self>) -> Result<u32, WorkflowError> {
            Ok(ctx.state(|s| s.secrets.len() as u32))
        }

        #[signal]
        fn store(&mut self, secret: Secret) {
            self.secrets.push(secret);
        }

        #[query]
        fn first(&self) -> Option<Secret> {
            self.secrets.first().map(|s| Secret(s.0))
        }
    }

    async fn client(h: &WorkflowHandle<Vault>) -> Result<u32, WfError> {
        h.store(Secret(1)).await?;
        Ok(h.first().await?.map_or(0, |s| s.0))
    }

    pub(crate) fn check() {
        let _ = client;
        let mut v = Vault::default();
        v.store(Secret(4));
        assert_eq!(v.first().map(|s| s.0), Some(4));
    }
}

fn main() {
    inner::check();
}
