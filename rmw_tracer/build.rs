//! Compiles the small C++ shim the CDR walker uses for std::string / std::u16string fields of
//! rclcpp messages (`src/cdr/cxx_string.cpp`), with the system C++ compiler and its default
//! (C++11) string ABI, the one the ROS 2 Jazzy C++ libraries are built with.

fn main() {
    println!("cargo:rerun-if-changed=src/cdr/cxx_string.cpp");
    cc::Build::new()
        .cpp(true)
        .std("c++17")
        .warnings(true)
        .file("src/cdr/cxx_string.cpp")
        .compile("rmw_tracer_cxx_string");
}
