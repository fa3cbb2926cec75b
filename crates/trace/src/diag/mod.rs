//! Per-connection diagnostics and the trace summary (document 000's Table 1).

pub mod exchanges;
pub mod ladder;
pub mod summary;
pub mod table;

pub use exchanges::ExchangeTable;
pub use ladder::GapClass;
pub use summary::Summary;
pub use table::{ConnectionTable, Vantage};
