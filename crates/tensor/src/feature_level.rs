use std::fmt;

/// A `DML_FEATURE_LEVEL`, stored as the header's value (0x4100 for 4_1).
/// The header, not the feature-level page's syntax block, gives the values
/// (see specs/errata.yaml).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FeatureLevel(u16);

impl FeatureLevel {
    pub const L1_0: FeatureLevel = FeatureLevel(0x1000);
    pub const L2_0: FeatureLevel = FeatureLevel(0x2000);
    pub const L2_1: FeatureLevel = FeatureLevel(0x2100);
    pub const L3_0: FeatureLevel = FeatureLevel(0x3000);
    pub const L3_1: FeatureLevel = FeatureLevel(0x3100);
    pub const L4_0: FeatureLevel = FeatureLevel(0x4000);
    pub const L4_1: FeatureLevel = FeatureLevel(0x4100);
    pub const L5_0: FeatureLevel = FeatureLevel(0x5000);
    pub const L5_1: FeatureLevel = FeatureLevel(0x5100);
    pub const L5_2: FeatureLevel = FeatureLevel(0x5200);
    pub const L6_0: FeatureLevel = FeatureLevel(0x6000);
    pub const L6_1: FeatureLevel = FeatureLevel(0x6100);
    pub const L6_2: FeatureLevel = FeatureLevel(0x6200);
    pub const L6_3: FeatureLevel = FeatureLevel(0x6300);
    pub const L6_4: FeatureLevel = FeatureLevel(0x6400);

    /// Every level the header defines, lowest first.
    pub const ALL: [FeatureLevel; 15] = [
        Self::L1_0,
        Self::L2_0,
        Self::L2_1,
        Self::L3_0,
        Self::L3_1,
        Self::L4_0,
        Self::L4_1,
        Self::L5_0,
        Self::L5_1,
        Self::L5_2,
        Self::L6_0,
        Self::L6_1,
        Self::L6_2,
        Self::L6_3,
        Self::L6_4,
    ];

    pub const LATEST: FeatureLevel = Self::L6_4;

    pub fn value(self) -> u16 {
        self.0
    }

    pub fn from_value(value: u16) -> Option<FeatureLevel> {
        Self::ALL.into_iter().find(|l| l.0 == value)
    }

    /// Accepts `4_1`, `4.1` or `DML_FEATURE_LEVEL_4_1`.
    pub fn parse(text: &str) -> Option<FeatureLevel> {
        let text = text.trim();
        let short = match text.get(..18) {
            Some(prefix) if prefix.eq_ignore_ascii_case("DML_FEATURE_LEVEL_") => &text[18..],
            _ => text,
        };
        let (major, minor) = short.split_once(['_', '.'])?;
        let (major, minor): (u16, u16) = (major.parse().ok()?, minor.parse().ok()?);
        if major > 15 || minor > 15 {
            return None;
        }
        FeatureLevel::from_value(major << 12 | minor << 8)
    }
}

impl fmt::Display for FeatureLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}_{}", self.0 >> 12, (self.0 >> 8) & 0xf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_spelling() {
        assert_eq!(FeatureLevel::parse("4_1"), Some(FeatureLevel::L4_1));
        assert_eq!(FeatureLevel::parse("4.1"), Some(FeatureLevel::L4_1));
        assert_eq!(
            FeatureLevel::parse("DML_FEATURE_LEVEL_3_0"),
            Some(FeatureLevel::L3_0)
        );
        assert_eq!(FeatureLevel::parse("3_2"), None);
        assert_eq!(FeatureLevel::L6_4.to_string(), "6_4");
        assert_eq!(FeatureLevel::L3_1.value(), 0x3100);
    }

    #[test]
    fn levels_are_ordered_by_value() {
        assert!(FeatureLevel::ALL.windows(2).all(|w| w[0] < w[1]));
    }
}
