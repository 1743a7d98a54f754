//! The AMI family of an EC2NodeClass, and the alias families (`al2023@latest`) that name one.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// AMI alias families the CRD accepts (`family@version`).
pub const ALIAS_FAMILIES: [&str; 6] = ["al2", "al2023", "bottlerocket", "windows2019", "windows2022", "windows2025"];
/// AMI family: decides user-data format, default block devices and max-pods behaviour.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, JsonSchema)]
pub enum AMIFamily {
    /// Amazon Linux 2.
    AL2,
    /// Amazon Linux 2023.
    AL2023,
    /// Bottlerocket.
    Bottlerocket,
    /// User-provided AMI and user data; Karpenter adds nothing.
    Custom,
    /// Windows Server 2019.
    Windows2019,
    /// Windows Server 2022.
    Windows2022,
    /// Windows Server 2025.
    Windows2025,
}

impl AMIFamily {
    /// All families, in the CRD's enum order.
    pub const ALL: [Self; 7] = [
        Self::AL2,
        Self::AL2023,
        Self::Bottlerocket,
        Self::Custom,
        Self::Windows2019,
        Self::Windows2022,
        Self::Windows2025,
    ];

    /// The API spelling (`"AL2023"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AL2 => "AL2",
            Self::AL2023 => "AL2023",
            Self::Bottlerocket => "Bottlerocket",
            Self::Custom => "Custom",
            Self::Windows2019 => "Windows2019",
            Self::Windows2022 => "Windows2022",
            Self::Windows2025 => "Windows2025",
        }
    }

    /// The family an alias family name (`al2023`) stands for.
    pub fn from_alias_family(family: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| *f != Self::Custom && f.as_str().eq_ignore_ascii_case(family))
    }

    /// Whether this is a Windows family.
    pub fn is_windows(self) -> bool {
        matches!(self, Self::Windows2019 | Self::Windows2022 | Self::Windows2025)
    }
}

impl fmt::Display for AMIFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
