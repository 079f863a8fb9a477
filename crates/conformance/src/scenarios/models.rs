//! A run's model configuration: what a provider without a data plane refuses, the catalog ids it serves and
//! refuses, the runtime model on the wire, and a per-run destination that leaves concurrent sessions alone.

use managed_agents_core::{Error, ModelConfig, Provider, Session, Terminal};

use super::helpers::{assert_completed, kickoff, options, require};
use super::requirements::{needs_accepted_models, needs_data_plane, needs_no_data_plane, needs_refused_models};
use super::verdict::Verdict;
use crate::backend::Backend;
use crate::script::{Script, ScriptTurn};
use crate::support::EchoTools;

/// The fake credential the destination scenario gives its run.
const RUN_CREDENTIAL: &str = "sk-conformance-run-credential";

fn one_reply() -> Script {
    Script::new().turn(ScriptTurn::text("Hello there."))
}

/// A credential or a destination on a provider without a data plane fails before anything is sent, naming the
/// provider and the setting.
pub async fn model_config_refused_without_data_plane<B: Backend>(backend: &B) -> Verdict {
    require!(backend, needs_no_data_plane);
    let harness = backend.start(one_reply()).await;
    let cases = [
        ("credential", ModelConfig::new().credential(RUN_CREDENTIAL)),
        ("destination", ModelConfig::new().destination("http://127.0.0.1:9")),
    ];
    for (setting, config) in cases {
        let error = Session::run(&*harness.provider, EchoTools, options(&harness).model_config(config))
            .await
            .expect_err("a provider without a data plane refuses the setting");
        let Error::DataPlaneUnsupported { provider, setting: named, .. } = &error else { panic!("{error:?}") };
        assert_eq!(provider, harness.provider.name());
        assert_eq!(*named, setting);
        assert!(!format!("{error} {error:?}").contains(RUN_CREDENTIAL), "the credential never prints");
    }
    assert!(harness.log.inputs().is_empty(), "nothing was sent");
    Verdict::Passed
}

/// Every model id the backend declares refused fails with [`Error::UnsupportedModel`] before anything is sent.
pub async fn catalog_ids_refused<B: Backend>(backend: &B) -> Verdict {
    require!(backend, needs_refused_models);
    let harness = backend.start(one_reply()).await;
    for id in backend.capabilities().models.refused {
        let error = Session::run(&*harness.provider, EchoTools, options(&harness).model(*id))
            .await
            .expect_err("a refused catalog id fails");
        assert!(matches!(&error, Error::UnsupportedModel { model, .. } if model == id), "`{id}` gave {error:?}");
    }
    assert!(harness.log.inputs().is_empty(), "nothing was sent");
    Verdict::Passed
}

/// Every model id the backend declares accepted runs, and the model it names reaches the wire.
pub async fn runtime_model_reaches_wire<B: Backend>(backend: &B) -> Verdict {
    require!(backend, needs_accepted_models);
    for (id, wire) in backend.capabilities().models.accepted {
        let harness = backend.start(one_reply()).await;
        let result = Session::run(&*harness.provider, EchoTools, options(&harness).model(*id)).await.expect("the run");
        assert_completed(&result, Terminal::EndTurn);
        assert!(harness.log.models().iter().any(|seen| seen == wire), "`{id}` → {:?}", harness.log.models());
    }
    Verdict::Passed
}

/// A run whose model configuration names a destination and a credential sends its requests there, with that
/// credential, while a concurrent session on the same provider keeps the provider's own server and key.
pub async fn per_run_destination_stays_apart<B: Backend>(backend: &B) -> Verdict {
    require!(backend, needs_data_plane);
    let harness = backend.start(one_reply()).await;
    let Some(destination) = backend.destination(one_reply()).await else {
        panic!("the provider has a data plane, so the backend must offer a destination (Backend::destination)");
    };
    let config = ModelConfig::new().destination(destination.base_url.clone()).credential(RUN_CREDENTIAL);
    let (routed, own) = tokio::join!(
        Session::run(&*harness.provider, EchoTools, options(&harness).prompt("routed").model_config(config)),
        Session::run(&*harness.provider, EchoTools, options(&harness).prompt("own")),
    );
    assert_completed(&routed.expect("the routed run"), Terminal::EndTurn);
    assert_completed(&own.expect("the concurrent run"), Terminal::EndTurn);
    assert_eq!(destination.log.inputs(), vec![kickoff("routed")], "the routed run went to its destination");
    assert_eq!(harness.log.inputs(), vec![kickoff("own")], "the concurrent run kept the provider's server");
    let used = destination.log.credentials();
    assert!(!used.is_empty() && used.iter().all(|key| key == RUN_CREDENTIAL), "the destination saw {used:?}");
    assert!(
        harness.log.credentials().iter().all(|key| key != RUN_CREDENTIAL),
        "the run's credential never reached the provider's own server"
    );
    Verdict::Passed
}
