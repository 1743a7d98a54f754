//! EC2 error codes and how the controller reacts to each (aws:pkg/errors/errors.go,
//! karpenter-behaviour.md §3.2).

use aws_sdk_ec2::error::ProvideErrorMetadata;

use crate::cloudprovider::CloudError;

/// Fleet error codes that mean "no capacity for this offering": each marks the (capacity type,
/// instance type, zone) unavailable for 3 minutes, even when the launch succeeded elsewhere.
pub const UNFULFILLABLE_CAPACITY_CODES: [&str; 8] = [
    "InsufficientInstanceCapacity",
    "MaxSpotInstanceCountExceeded",
    "VcpuLimitExceeded",
    "UnfulfillableCapacity",
    "Unsupported",
    "InsufficientFreeAddressesInSubnet",
    "MaxFleetCountExceeded",
    "ReservationCapacityExceeded",
];

/// Codes that mean the object does not exist (treated as gone).
pub const NOT_FOUND_CODES: [&str; 6] = [
    "InvalidCapacityReservationId.NotFound",
    "InvalidInstanceID.NotFound",
    "InvalidInstanceID.Malformed",
    "InvalidLaunchTemplateName.NotFoundException",
    "InvalidLaunchTemplateId.NotFound",
    "InvalidParameterValue.LaunchTemplateNotFound",
];

/// The code CreateFleet returns when a launch template named in the request is gone: the
/// template cache is invalidated and the launch retried once.
pub const LAUNCH_TEMPLATE_NOT_FOUND_CODES: [&str; 3] = [
    "InvalidLaunchTemplateName.NotFoundException",
    "InvalidLaunchTemplateId.NotFound",
    "InvalidParameterValue.LaunchTemplateNotFound",
];

/// Spot is not usable at all in this account: the whole `spot` capacity type is cached as
/// unavailable.
pub const SPOT_SERVICE_LINKED_ROLE_CODE: &str = "AuthFailure.ServiceLinkedRoleCreationNotPermitted";

/// A subnet has no free addresses left (aws pkg/errors/errors.go l. 33): besides marking the
/// offering, the subnet is sorted last for later launches (aws instance.go l. 602-607).
pub const INSUFFICIENT_FREE_ADDRESSES_CODE: &str = "InsufficientFreeAddressesInSubnet";

/// Whether a fleet error code is ICE-class.
pub fn is_unfulfillable_capacity(code: &str) -> bool {
    UNFULFILLABLE_CAPACITY_CODES.contains(&code)
}

/// Whether a code means "not found".
pub fn is_not_found(code: &str) -> bool {
    NOT_FOUND_CODES.contains(&code)
}

/// Maps an SDK error to a [`CloudError`]: not-found codes become `NotFound`, everything else
/// `Other` with the AWS code as reason (or a transport reason when there is no code).
pub fn classify<E: ProvideErrorMetadata + std::error::Error + 'static>(error: &E) -> CloudError {
    let code = error.code().unwrap_or_default();
    let message = error.message().map_or_else(|| error_chain(error), str::to_owned);
    if is_not_found(code) {
        return CloudError::NotFound(format!("{code}: {message}"));
    }
    if code.is_empty() {
        return CloudError::other("CloudProviderError", message);
    }
    CloudError::other(code, message)
}

/// The error and its sources on one line (SDK display strings are terse: "dispatch failure").
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ice_class_codes_match_karpenter() {
        for code in
            ["InsufficientInstanceCapacity", "MaxSpotInstanceCountExceeded", "InsufficientFreeAddressesInSubnet"]
        {
            assert!(is_unfulfillable_capacity(code), "{code}");
        }
        assert!(!is_unfulfillable_capacity("RequestLimitExceeded"));
        assert!(!is_unfulfillable_capacity("InvalidParameterValue"));
        assert!(is_not_found("InvalidInstanceID.NotFound"));
    }
}
