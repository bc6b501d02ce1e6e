fn main() { eprintln!("tracer: not built yet"); std::process::exit(2) }
