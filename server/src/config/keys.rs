//! The keys the config file accepts, read from the serde derive of `Config` (so the list
//! cannot drift from the struct). Must not validate values (`crate::preflight` does).

use super::*;

/// Every key the config file accepts, in the order of [`Config`]'s fields. Read from the serde
/// derive itself (the field list it hands to `deserialize_struct`), so it cannot drift from the
/// struct; the example configuration is tested against it.
pub fn keys() -> &'static [&'static str] {
    use serde::de::{self, Visitor};

    /// A deserializer that only records the field list and then gives up.
    struct Probe<'a>(&'a mut &'static [&'static str]);

    impl<'de> de::Deserializer<'de> for Probe<'_> {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(de::Error::custom("probe"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
            unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }

    let mut fields: &'static [&'static str] = &[];
    let _ = Config::deserialize(Probe(&mut fields));
    fields
}
