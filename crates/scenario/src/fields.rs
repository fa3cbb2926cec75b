//! A result document's fields declared once — the analyzer's summary, the simulator's
//! connection report: each field's key, unit and meaning beside its type, so that the
//! bindings convert the document with serde and the Python layer takes its names, units
//! and meanings from the declaration instead of a list of its own.

use serde::Serialize;

/// One field of a result document: its key, its unit ("" for a count, a name or a
/// section), and what it means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FieldDoc {
    pub name: &'static str,
    pub unit: &'static str,
    /// Its Rust type, as declared (`u64`, `Option<f64>`, `Vec<f64>`).
    pub ty: &'static str,
    pub doc: &'static str,
}

impl FieldDoc {
    /// The meaning as one line (the declaration's doc comment, its lines joined).
    pub fn meaning(&self) -> String {
        self.doc.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

/// `document! { /// doc \n pub struct Name { /// doc \n "unit" field: Type, … } }` declares
/// the struct (serialized in the order written) and `Name::fields()`, each field's key,
/// unit and doc. A `#[serde(flatten)]` field is a section whose fields are spliced in.
#[macro_export]
macro_rules! document {
    ($(#[$meta:meta])* pub struct $name:ident {
        $( $(#[doc = $doc:literal])+ $(#[serde($($serde:tt)*)])* $unit:literal $field:ident : $ty:ty, )*
    }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, serde::Serialize)]
        pub struct $name { $( $(#[doc = $doc])+ $(#[serde($($serde)*)])* pub $field: $ty, )* }

        impl $name {
            /// Every key of this document, in order, with its unit and meaning.
            // Pushed one field at a time: a section's fields are spliced in among them.
            #[allow(clippy::vec_init_then_push)]
            pub fn fields() -> Vec<$crate::fields::FieldDoc> {
                let mut out = Vec::new();
                $( $crate::document!(@field out, [$($($serde)*)*], $unit, $field, $ty, concat!($($doc),+)); )*
                out
            }
        }
    };
    (@field $out:ident, [flatten], $unit:literal, $field:ident, $ty:ty, $doc:expr) => { $out.extend(<$ty>::fields()) };
    (@field $out:ident, [$($serde:tt)*], $unit:literal, $field:ident, $ty:ty, $doc:expr) => {
        $out.push($crate::fields::FieldDoc { name: stringify!($field), unit: $unit, ty: stringify!($ty), doc: $doc })
    };
}
