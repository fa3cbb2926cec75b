//! Counter columns, each declared once here: its name, its meaning and how a connection's
//! value is counted. A counter is a column of the connection table (after `SCHEMA`'s, as
//! `uint32`) and a total of the summary document (after the diagnosis' counts); the
//! bindings, `--columns`, the Arrow table and `--summary-json` take it from here.

use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::ColumnDef;
#[allow(unused_imports)] // the declarations below name them
use crate::track::{Conn, C2S, S2C};

/// `counters! { /// meaning \n name: |conn| value; … }`: the counters' names, their
/// column definitions and `of`, a connection's value of each.
macro_rules! counters {
    ($( $(#[doc = $doc:literal])+ $name:ident: |$c:ident| $value:expr; )*) => {
        /// The counters' names, in order.
        pub const NAMES: &[&str] = &[$(stringify!($name)),*];

        /// The counters as connection-table columns.
        pub const COLUMNS: &[ColumnDef] =
            &[$( ColumnDef { name: stringify!($name), arrow: "uint32", unit: "", doc: concat!($($doc),+) } ),*];

        /// A connection's value of each counter, in the order of `NAMES`.
        #[allow(unused_variables)]
        pub fn of(conn: &Conn) -> [u32; COUNT] {
            [$( { let $c = conn; $value } ),*]
        }
    };
}

counters! {
    // A counter a declaration: its meaning (a doc comment), then `name: |conn| its value;`.
}

/// How many counters there are.
pub const COUNT: usize = NAMES.len();

/// The counters' columns of a connection table: one vector each, in the order of `NAMES`.
pub type Columns = [Vec<u32>; COUNT];

/// The counters added up over connections: the summary's totals, written as one key each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Totals(pub [u64; COUNT]);

impl Totals {
    pub fn add_conn(&mut self, c: &Conn) {
        for (t, v) in self.0.iter_mut().zip(of(c)) {
            *t += u64::from(v);
        }
    }

    pub fn add(&mut self, o: &Totals) {
        for (t, v) in self.0.iter_mut().zip(o.0) {
            *t += v;
        }
    }

    /// The summary document's keys for the totals (a section spliced into the diagnosis).
    pub fn fields() -> Vec<shortflow_scenario::fields::FieldDoc> {
        COLUMNS
            .iter()
            .map(|c| shortflow_scenario::fields::FieldDoc { name: c.name, unit: c.unit, ty: "u64", doc: c.doc })
            .collect()
    }
}

impl Serialize for Totals {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(COUNT))?;
        for (name, v) in NAMES.iter().zip(self.0) {
            map.serialize_entry(name, &v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Totals {
    /// From the map `serialize` writes: every counter named, no other key.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let map = std::collections::BTreeMap::<String, u64>::deserialize(d)?;
        let mut out = Totals::default();
        for (k, v) in map {
            let i = NAMES.iter().position(|n| *n == k).ok_or_else(|| D::Error::custom(format!("unknown counter {k:?}")))?;
            out.0[i] = v;
        }
        Ok(out)
    }
}
