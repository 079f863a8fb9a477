//! What the two reference providers share: every method of [`Provider`](managed_agents_core::Provider) but how
//! a connection opens (the reference wire, provisioning that creates nothing), their input log, and the harness
//! the suite runs them in.

/// Implements `log`, `into_harness` and [`Provider`](managed_agents_core::Provider) for `$provider`: a struct
/// with a `world: SharedWorld` field, the consts `NAME` and `CAPABILITIES`, and a
/// `fn connect(&self, OpenRequest) -> Result<OpenConnection, Error>` that opens its own kind of connection.
macro_rules! reference_provider {
    ($provider:ident) => {
        impl $provider {
            /// What the provider received.
            pub fn log(&self) -> $crate::log::InputLog {
                self.world.lock().log.clone()
            }

            /// The provider in a harness of its own: no session options needed, its log as the backend's.
            pub(super) fn into_harness(self) -> $crate::backend::Harness<Self> {
                let log = self.log();
                let options = managed_agents_core::SessionOptions::new();
                $crate::backend::Harness::new(std::sync::Arc::new(self), options, log)
            }
        }

        #[async_trait::async_trait]
        impl managed_agents_core::Provider for $provider {
            fn name(&self) -> &str {
                Self::NAME
            }

            fn capabilities(&self) -> managed_agents_core::Capabilities {
                Self::CAPABILITIES
            }

            /// Serves bare ids and the `reference:` catalog; the wire model is the id without its catalog.
            fn native_model(&self, id: &str) -> Result<serde_json::Value, managed_agents_core::Error> {
                $crate::reference::wire::native_model(Self::NAME, id)
            }

            async fn open(
                &self,
                request: managed_agents_core::OpenRequest,
            ) -> Result<managed_agents_core::OpenConnection, managed_agents_core::Error> {
                if let Some(model) = request.model() {
                    let wire = self.native_model(model)?;
                    self.world.lock().log.record_model(wire.as_str().unwrap_or_default());
                }
                self.connect(request)
            }

            fn normalize(&self, events: &[managed_agents_core::Event]) -> managed_agents_core::TurnResult {
                $crate::reference::wire::normalize(events)
            }

            fn text_delta(&self, event: &managed_agents_core::Event) -> Option<String> {
                $crate::reference::wire::text_delta(event)
            }

            fn pending_tool_uses(&self, events: &[managed_agents_core::Event]) -> Vec<managed_agents_core::ToolUse> {
                $crate::reference::wire::pending_tool_uses(events)
            }

            /// Nothing is created: the handle names the definition (`<name>_<digest8>`).
            async fn provision(
                &self,
                spec: &managed_agents_core::AgentSpec,
                _: Option<&managed_agents_core::EnvironmentSpec>,
            ) -> Result<managed_agents_core::AgentHandle, managed_agents_core::Error> {
                $crate::reference::wire::provisioned(spec)
            }

            /// Nothing to remove.
            async fn teardown(&self, _: &managed_agents_core::AgentHandle) -> Result<(), managed_agents_core::Error> {
                Ok(())
            }
        }
    };
}

pub(super) use reference_provider;
