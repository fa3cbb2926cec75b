//! Prints the scenario reference: `keys` (Markdown table, default), `schema` (JSON) or
//! `kernel` (the kernel table as JSON, as the bindings serve it).
fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("kernel") => println!("{}", shortflow_scenario::kernel::table_json()),
        Some("schema") => println!("{}", serde_json::to_string_pretty(&shortflow_scenario::schema::json_schema()).unwrap()),
        _ => print!("{}", shortflow_scenario::schema::keys_markdown()),
    }
}
