//! Harness statuses: what each means for a wait.

use aws_sdk_bedrockagentcorecontrol::types::{HarnessEndpointStatus, HarnessStatus};

/// What a harness status means for a wait (total over every status, known or not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HarnessStatusClass {
    /// `READY`: usable.
    Ready,
    /// `CREATING` or `UPDATING`: keep waiting (and adoptable on a name conflict).
    InProgress,
    /// `DELETING`: it will never become ready; its name frees up once it is gone.
    Deleting,
    /// `CREATE_FAILED`, `UPDATE_FAILED` or `DELETE_FAILED`: fatal.
    Failed,
    /// A status this SDK does not know: fatal, never polled further.
    Unknown,
}

impl HarnessStatusClass {
    /// Whether a harness in this class may be adopted when its name is taken.
    pub(crate) fn adoptable(self) -> bool {
        matches!(self, Self::Ready | Self::InProgress)
    }
}

/// Classifies a harness status.
pub(crate) fn classify(status: &HarnessStatus) -> HarnessStatusClass {
    match status {
        HarnessStatus::Ready => HarnessStatusClass::Ready,
        HarnessStatus::Creating | HarnessStatus::Updating => HarnessStatusClass::InProgress,
        HarnessStatus::Deleting => HarnessStatusClass::Deleting,
        HarnessStatus::CreateFailed | HarnessStatus::UpdateFailed | HarnessStatus::DeleteFailed => {
            HarnessStatusClass::Failed
        }
        _ => HarnessStatusClass::Unknown,
    }
}

/// Classifies a harness endpoint's status. The service model gives endpoints the same vocabulary as harnesses
/// (two enums with the same values), so one classification serves both: an endpoint status this SDK does not know
/// as a harness status is [`HarnessStatusClass::Unknown`].
pub(crate) fn classify_endpoint(status: &HarnessEndpointStatus) -> HarnessStatusClass {
    classify(&HarnessStatus::from(status.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// harness_status_test.exs: "classifies the known vocabulary".
    #[test]
    fn the_known_vocabulary_is_classified() {
        assert_eq!(classify(&HarnessStatus::from("READY")), HarnessStatusClass::Ready);
        assert_eq!(classify(&HarnessStatus::from("CREATING")), HarnessStatusClass::InProgress);
        assert_eq!(classify(&HarnessStatus::from("UPDATING")), HarnessStatusClass::InProgress);
        assert_eq!(classify(&HarnessStatus::from("DELETING")), HarnessStatusClass::Deleting);
        for failed in ["CREATE_FAILED", "UPDATE_FAILED", "DELETE_FAILED"] {
            assert_eq!(classify(&HarnessStatus::from(failed)), HarnessStatusClass::Failed, "{failed}");
        }
    }

    /// harness_status_test.exs: "an unrecognized status is named, not silently polled".
    #[test]
    fn an_unknown_status_is_its_own_class() {
        let status = HarnessStatus::from("INACTIVE");
        assert_eq!(classify(&status), HarnessStatusClass::Unknown);
        assert_eq!(status.as_str(), "INACTIVE", "the status keeps its name for the error");
    }

    /// harness_status_test.exs: "every harness status the mirrored service model declares is classified". Upstream
    /// read botocore's model from a private corpus; the SDK's generated enum is that model, so every value it
    /// declares must land in a known class.
    #[test]
    fn every_status_the_service_model_declares_is_classified() {
        let declared = HarnessStatus::values();
        assert!(declared.len() >= 7, "{declared:?}");
        for status in declared {
            assert_ne!(classify(&HarnessStatus::from(*status)), HarnessStatusClass::Unknown, "{status}");
        }
    }

    /// The endpoint wait relies on the two vocabularies being one: every endpoint status the service model declares
    /// lands in the class of the harness status of the same name, none in `Unknown`.
    #[test]
    fn every_endpoint_status_is_classified_as_its_harness_namesake() {
        let declared = HarnessEndpointStatus::values();
        assert!(declared.len() >= 7, "{declared:?}");
        for status in declared {
            let class = classify_endpoint(&HarnessEndpointStatus::from(*status));
            assert_ne!(class, HarnessStatusClass::Unknown, "{status}");
            assert_eq!(class, classify(&HarnessStatus::from(*status)), "{status}");
        }
        assert_eq!(classify_endpoint(&HarnessEndpointStatus::from("INACTIVE")), HarnessStatusClass::Unknown);
    }

    #[test]
    fn every_status_is_classified() {
        assert_eq!(classify(&HarnessStatus::Ready), HarnessStatusClass::Ready);
        assert_eq!(classify(&HarnessStatus::Creating), HarnessStatusClass::InProgress);
        assert_eq!(classify(&HarnessStatus::Updating), HarnessStatusClass::InProgress);
        assert_eq!(classify(&HarnessStatus::Deleting), HarnessStatusClass::Deleting);
        for failed in [HarnessStatus::CreateFailed, HarnessStatus::UpdateFailed, HarnessStatus::DeleteFailed] {
            assert_eq!(classify(&failed), HarnessStatusClass::Failed);
        }
        assert_eq!(classify(&HarnessStatus::from("INACTIVE")), HarnessStatusClass::Unknown);
        assert!(!HarnessStatusClass::Unknown.adoptable() && HarnessStatusClass::InProgress.adoptable());
    }
}
