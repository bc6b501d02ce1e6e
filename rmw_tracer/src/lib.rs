//! rmw_tracer: the rmw entry points.
