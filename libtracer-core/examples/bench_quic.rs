//! bench_quic: QUIC's own round trip for tools/bench/net, beside the rmws and raw UDP in the
//! same run (`libtracer_core::link::quic::probe_ping`: quinn with a link's settings, nothing
//! of libtracer above it).
//!
//!   bench_quic echo PORT [task|thread|inline|engine]                   (host B, every address: answers)
//!   bench_quic ping ADDR PORT SIZE ITERS [task|thread|inline|engine]   (host A: prints one JSON line)
//!   bench_quic burst ADDR PORT SIZE BURST ROUNDS [task|thread|inline|engine]   (host A: throughput)
//!
//! `task` (the default) runs the loop as a task on the QUIC runtime's worker; `thread` on a
//! plain thread that waits on the runtime for each write and read, as an rcl thread does;
//! `inline` on quinn-proto alone, driven by the one thread that uses it (no runtime); `engine`
//! on the runtime-free engine of docs/network.md section 4a (sent inline by the thread, received
//! by the engine loop, which hands each message over).
//! ping prints {"size":..,"mode":..,"quic_rtt_us":{"p50":..,"p99":..},"rounds":..}; burst
//! sends ROUNDS rounds of BURST messages back to back (one more unmeasured first) and prints
//! {"size":..,"mode":..,"burst":..,"rounds":..,"mb_per_s":..,"median_round_mb_per_s":..}
//! (MB = 10^6 B; mb_per_s over all measured rounds, as bench_ping's). The echo ends when it has
//! had no connection for 120 s.

use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;

use libtracer_core::link::quic::{probe_burst, probe_echo, probe_ping, ProbeMode};

const USAGE: &str = "usage: bench_quic echo PORT [task|thread|inline|engine] | \
    bench_quic ping ADDR PORT SIZE ITERS [task|thread|inline|engine] | \
    bench_quic burst ADDR PORT SIZE BURST ROUNDS [task|thread|inline|engine]";

fn run(args: &[String]) -> Result<(), String> {
    let mode = |i: usize| match args.get(i) {
        None => Ok(ProbeMode::Task),
        Some(m) => ProbeMode::parse(m).ok_or_else(|| format!("unknown mode {m}\n{USAGE}")),
    };
    let num = |i: usize, what: &str| {
        args.get(i)
            .and_then(|a| a.parse::<usize>().ok())
            .ok_or_else(|| format!("bad {what}\n{USAGE}"))
    };
    match args.first().map(String::as_str) {
        Some("echo") if args.len() <= 3 => {
            let port = u16::try_from(num(1, "PORT")?).map_err(|_| "bad PORT".to_string())?;
            // Every address: the echo runs inside the benchmark's own network namespace.
            probe_echo(SocketAddr::from(([0, 0, 0, 0], port)), mode(2)?)
        }
        Some("ping") if (5..=6).contains(&args.len()) => {
            let ip: IpAddr = args[1]
                .parse()
                .map_err(|_| format!("bad ADDR {}", args[1]))?;
            let port = u16::try_from(num(2, "PORT")?).map_err(|_| "bad PORT".to_string())?;
            let (size, iters, mode) = (num(3, "SIZE")?, num(4, "ITERS")?, mode(5)?);
            let mut t = probe_ping(SocketAddr::new(ip, port), size, iters, mode)?;
            t.sort();
            let us = |i: usize| t[i.min(t.len() - 1)].as_secs_f64() * 1e6;
            println!(
                "{{\"size\":{size},\"mode\":\"{}\",\"quic_rtt_us\":{{\"p50\":{:.2},\"p99\":{:.2}}},\"rounds\":{}}}",
                mode.name(),
                us(t.len() / 2),
                us(t.len() * 99 / 100),
                t.len()
            );
            Ok(())
        }
        Some("burst") if (6..=7).contains(&args.len()) => {
            let ip: IpAddr = args[1]
                .parse()
                .map_err(|_| format!("bad ADDR {}", args[1]))?;
            let port = u16::try_from(num(2, "PORT")?).map_err(|_| "bad PORT".to_string())?;
            let (size, burst, rounds) = (num(3, "SIZE")?, num(4, "BURST")?, num(5, "ROUNDS")?);
            let mode = mode(6)?;
            let mut t = probe_burst(SocketAddr::new(ip, port), size, burst, rounds, mode)?;
            let bytes = (size * burst) as f64;
            let total: f64 = t.iter().map(|d| d.as_secs_f64()).sum();
            t.sort();
            println!(
                "{{\"size\":{size},\"mode\":\"{}\",\"burst\":{burst},\"rounds\":{},\"mb_per_s\":{:.3},\"median_round_mb_per_s\":{:.3}}}",
                mode.name(),
                t.len(),
                bytes * t.len() as f64 / total / 1e6,
                bytes / t[t.len() / 2].as_secs_f64() / 1e6
            );
            Ok(())
        }
        _ => Err(USAGE.into()),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench_quic: {e}");
            ExitCode::from(2)
        }
    }
}
