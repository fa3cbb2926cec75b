//! Per-connection diagnostics and the trace summary (document 000's Table 1).

/// One column of a table (connections, exchanges): the one definition its writers and
/// readers share.
#[derive(Debug, Clone, Copy)]
pub struct ColumnDef {
    pub name: &'static str,
    /// The Arrow type, as pyarrow spells it.
    pub arrow: &'static str,
    pub unit: &'static str,
    pub doc: &'static str,
}

/// A table's columns as `ColumnDef`s: `schema! { /// doc \n NAME; "column": "arrow type", "unit", "meaning"; … }`.
macro_rules! schema {
    ($(#[$meta:meta])* $table:ident; $( $name:literal : $ty:literal , $unit:literal , $doc:literal ;)*) => {
        $(#[$meta])*
        pub const $table: &[ColumnDef] = &[ $( ColumnDef { name: $name, arrow: $ty, unit: $unit, doc: $doc }, )* ];
    };
}

/// Implements, on a table with the time account's columns (connections, exchanges), the
/// two ways between a row's time by cause and those columns. The columns and the cause
/// each holds are listed here once.
macro_rules! cause_columns {
    ($table:ty) => {
        cause_columns!(@impl $table;
            time_network_s: Network,
            time_handshake_s: Handshake,
            time_slow_start_s: SlowStart,
            time_timeout_s: Timeout,
            time_fast_retransmit_s: FastRetransmit,
            time_delayed_ack_s: DelayedAck,
            time_zero_window_s: ZeroWindow,
            time_application_s: Application,
            time_tlp_s: Tlp,
            time_idle_s: Idle,
            time_teardown_s: Teardown,
            time_receive_window_s: ReceiveWindow);
    };
    (@impl $table:ty; $($column:ident: $cause:ident),*) => {
        impl $table {
            /// Appends a row's time by cause (s, indexed by `Cause`) to the cause columns.
            fn push_causes(&mut self, t: &[f64; Cause::COUNT]) {
                $( self.$column.push(t[Cause::$cause as usize]); )*
            }

            /// Row `i`'s time by cause (s), indexed by `Cause`: its `time_*_s` columns,
            /// which add up to its `duration_s`.
            pub fn time_by_cause_s(&self, i: usize) -> [f64; Cause::COUNT] {
                let mut out = [0.0; Cause::COUNT];
                $( out[Cause::$cause as usize] = self.$column[i]; )*
                out
            }
        }
    };
}

pub mod counters;
pub mod digest;
pub mod document;
pub mod exchanges;
pub mod ladder;
pub mod summary;
pub mod table;

pub use exchanges::ExchangeTable;
pub use ladder::GapClass;
pub use summary::Summary;
pub use table::{ConnectionTable, Vantage};
