//! Values a seed draws: a fixed value, `{uniform: [lo, hi]}` or `{choice: [a, b, ...]}`.
//!
//! Any scenario number, duration or resource quantity may be written as a distribution, so
//! one file describes a family of runs and each seed picks one member (the expanded scenario
//! prints what it picked). The map form is strict: `{unifrom: ...}` is an error listing the
//! allowed forms.

use std::fmt;
use std::marker::PhantomData;

use rand::Rng;
use serde::de::{self, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::error::FieldError;
use crate::actors::quantity::{parse_milli, parse_value};
use dovetail_world::SimDuration;
use dovetail_world::SimRng;

/// Something a distribution can produce: interpolates between two bounds.
pub trait Sample: Clone + PartialOrd {
    /// The value a fraction `u` in `[0, 1]` of the way from `lo` to `hi`.
    fn between(lo: &Self, hi: &Self, u: f64) -> Self;
}

/// A value, or a distribution of values drawn per seed (or per use, e.g. per Job).
#[derive(Clone, Debug, PartialEq)]
pub enum Dist<T> {
    /// Always this value.
    Fixed(T),
    /// Uniform between the two bounds, inclusive.
    Uniform(T, T),
    /// One of these, equally likely.
    Choice(Vec<T>),
}

impl<T: Sample> Dist<T> {
    /// Draws one value.
    pub fn draw(&self, rng: &mut SimRng) -> T {
        match self {
            Dist::Fixed(v) => v.clone(),
            Dist::Uniform(lo, hi) => T::between(lo, hi, rng.random::<f64>()),
            Dist::Choice(options) => options[rng.random_range(0..options.len())].clone(),
        }
    }

    /// Checks bounds are ordered and choices non-empty.
    pub fn validate(&self) -> Result<(), FieldError> {
        match self {
            Dist::Uniform(lo, hi) if lo > hi => {
                Err(FieldError::new("uniform", "the lower bound is above the upper bound"))
            }
            Dist::Choice(options) if options.is_empty() => Err(FieldError::new("choice", "needs at least one value")),
            _ => Ok(()),
        }
    }

    /// The largest value it can produce (for validation against limits).
    pub fn max(&self) -> T {
        match self {
            Dist::Fixed(v) | Dist::Uniform(_, v) => v.clone(),
            Dist::Choice(options) => {
                options.iter().cloned().reduce(|a, b| if b > a { b } else { a }).expect("validated: non-empty")
            }
        }
    }
}

impl<T> From<T> for Dist<T> {
    fn from(v: T) -> Self {
        Dist::Fixed(v)
    }
}

/// The map forms, externally tagged so serde lists the allowed keys on a typo.
#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
enum Form<T> {
    Uniform([T; 2]),
    Choice(Vec<T>),
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Dist<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Dist<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a value, {uniform: [lo, hi]} or {choice: [a, b, ...]}")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                T::deserialize(v.into_deserializer()).map(Dist::Fixed)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                T::deserialize(v.into_deserializer()).map(Dist::Fixed)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                T::deserialize(v.into_deserializer()).map(Dist::Fixed)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                T::deserialize(v.into_deserializer()).map(Dist::Fixed)
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
                T::deserialize(v.into_deserializer()).map(Dist::Fixed)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                match Form::<T>::deserialize(de::value::MapAccessDeserializer::new(map))? {
                    Form::Uniform([lo, hi]) => Ok(Dist::Uniform(lo, hi)),
                    Form::Choice(options) => Ok(Dist::Choice(options)),
                }
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

impl<T: Serialize + Clone> Serialize for Dist<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Dist::Fixed(v) => v.serialize(s),
            Dist::Uniform(lo, hi) => Form::Uniform([lo.clone(), hi.clone()]).serialize(s),
            Dist::Choice(options) => Form::Choice(options.clone()).serialize(s),
        }
    }
}

impl Sample for f64 {
    fn between(lo: &Self, hi: &Self, u: f64) -> Self {
        // Three significant decimals keep the expanded scenario readable.
        ((lo + (hi - lo) * u) * 1000.0).round() / 1000.0
    }
}

impl Sample for u32 {
    fn between(lo: &Self, hi: &Self, u: f64) -> Self {
        let span = f64::from(hi - lo) + 1.0;
        (lo + (u * span).floor() as u32).min(*hi)
    }
}

impl Sample for SimDuration {
    fn between(lo: &Self, hi: &Self, u: f64) -> Self {
        // Whole seconds (or milliseconds below ten seconds).
        let secs = lo.0.as_secs_f64() + (hi.0.as_secs_f64() - lo.0.as_secs_f64()) * u;
        let d = if hi.0.as_secs() >= 10 {
            std::time::Duration::from_secs(secs.round() as u64)
        } else {
            std::time::Duration::from_millis((secs * 1000.0).round() as u64)
        };
        SimDuration(d)
    }
}

/// CPU in millicores, written as Kubernetes quantities (`250m`, `2`, `1.5`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cpu(pub i64);

/// Memory in bytes, written as Kubernetes quantities (`512Mi`, `4Gi`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Memory(pub i64);

impl Sample for Cpu {
    fn between(lo: &Self, hi: &Self, u: f64) -> Self {
        // To the nearest 10m, as people write requests.
        let m = lo.0 as f64 + (hi.0 - lo.0) as f64 * u;
        Cpu((((m / 10.0).round() as i64) * 10).clamp(lo.0, hi.0))
    }
}

impl Sample for Memory {
    fn between(lo: &Self, hi: &Self, u: f64) -> Self {
        // To the nearest MiB.
        const MI: f64 = 1024.0 * 1024.0;
        let b = lo.0 as f64 + (hi.0 - lo.0) as f64 * u;
        Memory((((b / MI).round() as i64) * (1 << 20)).clamp(lo.0, hi.0))
    }
}

impl fmt::Display for Cpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 % 1000 == 0 { write!(f, "{}", self.0 / 1000) } else { write!(f, "{}m", self.0) }
    }
}

impl fmt::Display for Memory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const GI: i64 = 1 << 30;
        const MI: i64 = 1 << 20;
        const KI: i64 = 1 << 10;
        match self.0 {
            b if b != 0 && b % GI == 0 => write!(f, "{}Gi", b / GI),
            b if b != 0 && b % MI == 0 => write!(f, "{}Mi", b / MI),
            b if b != 0 && b % KI == 0 => write!(f, "{}Ki", b / KI),
            b => write!(f, "{b}"),
        }
    }
}

/// Deserialises a quantity written as a string or a bare number.
fn quantity_text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    struct V;
    impl Visitor<'_> for V {
        type Value = String;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a Kubernetes quantity such as 250m, 2, 512Mi or 4Gi")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
            Ok(v.to_string())
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
            Ok(v.to_string())
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
            Ok(v.to_string())
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
            Ok(v.to_string())
        }
    }
    d.deserialize_any(V)
}

impl<'de> Deserialize<'de> for Cpu {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = quantity_text(d)?;
        match parse_milli(&text) {
            Ok(m) if m > 0 => Ok(Cpu(m)),
            Ok(_) => Err(de::Error::custom(format!("cpu {text:?} must be positive"))),
            Err(e) => Err(de::Error::custom(format!("cpu {text:?}: {e}"))),
        }
    }
}

impl<'de> Deserialize<'de> for Memory {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = quantity_text(d)?;
        match parse_value(&text) {
            Ok(b) if b > 0 => Ok(Memory(b)),
            Ok(_) => Err(de::Error::custom(format!("memory {text:?} must be positive"))),
            Err(e) => Err(de::Error::custom(format!("memory {text:?}: {e}"))),
        }
    }
}

impl Serialize for Cpu {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl Serialize for Memory {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dovetail_world::derive_rng;

    #[test]
    fn scalars_and_map_forms_parse() {
        let d: Dist<Cpu> = serde_saphyr::from_str("250m").unwrap();
        assert_eq!(d, Dist::Fixed(Cpu(250)));
        let d: Dist<Cpu> = serde_saphyr::from_str("{uniform: [250m, 2]}").unwrap();
        assert_eq!(d, Dist::Uniform(Cpu(250), Cpu(2000)));
        let d: Dist<Memory> = serde_saphyr::from_str("{choice: [512Mi, 1Gi]}").unwrap();
        assert_eq!(d, Dist::Choice(vec![Memory(512 << 20), Memory(1 << 30)]));
        let d: Dist<f64> = serde_saphyr::from_str("0.5").unwrap();
        assert_eq!(d, Dist::Fixed(0.5));
        let d: Dist<SimDuration> = serde_saphyr::from_str("{uniform: [30s, 2m]}").unwrap();
        assert_eq!(d.max(), SimDuration::parse("2m").unwrap());
    }

    #[test]
    fn a_misspelt_form_lists_the_allowed_ones() {
        let e = serde_saphyr::from_str::<Dist<Cpu>>("{unifrom: [1, 2]}").unwrap_err().to_string();
        assert!(e.contains("unifrom") && e.contains("uniform") && e.contains("choice"), "{e}");
    }

    #[test]
    fn draws_stay_in_bounds_and_round() {
        let mut rng = derive_rng(1, "t");
        let d = Dist::Uniform(Cpu(250), Cpu(2000));
        for _ in 0..100 {
            let v = d.draw(&mut rng);
            assert!((250..=2000).contains(&v.0) && v.0 % 10 == 0, "{v}");
        }
        let n = Dist::Uniform(1u32, 3);
        let mut seen = [false; 4];
        for _ in 0..100 {
            seen[n.draw(&mut rng) as usize] = true;
        }
        assert_eq!(seen, [false, true, true, true]);
        assert_eq!(Memory(1536 << 20).to_string(), "1536Mi");
        assert_eq!(Cpu(1500).to_string(), "1500m");
    }
}
