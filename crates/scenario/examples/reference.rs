//! Prints the scenario reference: `keys` (Markdown table, default), `schema` (JSON) or
//! `kernel` (the kernel table as JSON, as the bindings serve it) or `linux` (the `linux`
//! stack profile as JSON, which takes its defaults from the kernel table).
fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("kernel") => println!("{}", shortflow_scenario::kernel::table_json()),
        Some("linux") => println!("{}", serde_json::to_string(&shortflow_scenario::profile::profile("linux")).unwrap()),
        Some("schema") => println!("{}", serde_json::to_string_pretty(&shortflow_scenario::schema::json_schema()).unwrap()),
        _ => print!("{}", shortflow_scenario::schema::keys_markdown()),
    }
}
