// A Foxglove WebSocket client driven line by line, for test_cli_serve.py, on
// @foxglove/ws-protocol (the protocol library Foxglove Studio uses). Commands are JSON lines
// on stdin; every event is a JSON line on stdout. It exits on {"cmd": "close"}, when stdin
// ends, or after TIMEOUT seconds (status 1).
//
//   node driver.js ws://127.0.0.1:8765 TIMEOUT
//
// Commands:
//   {"cmd": "call", "serviceId": N, "callId": N, "hex": "..", "encoding": "cdr"}
//   {"cmd": "advertise", "topic": T, "schemaName": S, "encoding": "cdr"}  -> {"event": "advertised", "channelId": N}
//   {"cmd": "unadvertise", "channelId": N}
//   {"cmd": "publish", "channelId": N, "hex": ".."}
//   {"cmd": "get", "names": [..], "id": ".."}
//   {"cmd": "set", "parameters": [..], "id": ".."}
//   {"cmd": "raw", "text": ".."} / {"cmd": "rawbin", "hex": ".."}: sent as they are
//   {"cmd": "close"}
const { FoxgloveClient } = require("@foxglove/ws-protocol");
const WebSocket = require("ws");
const readline = require("readline");

const [url, timeout] = process.argv.slice(2);
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const hex = (d) => Buffer.from(d.buffer, d.byteOffset, d.byteLength).toString("hex");
const ws = new WebSocket(url, [FoxgloveClient.SUPPORTED_SUBPROTOCOL]);
const client = new FoxgloveClient({ ws });
setTimeout(() => {
  out({ event: "timeout" });
  process.exit(1);
}, Number(timeout) * 1000);
client.on("open", () => out({ event: "open" }));
client.on("error", (e) => out({ event: "error", message: String(e) }));
client.on("close", () => out({ event: "close" }));
client.on("serverInfo", (i) =>
  out({ event: "serverInfo", capabilities: i.capabilities, supportedEncodings: i.supportedEncodings }),
);
client.on("status", (s) => out({ event: "status", level: s.level, message: s.message }));
client.on("advertise", (channels) => out({ event: "advertise", channels }));
client.on("advertiseServices", (services) => out({ event: "advertiseServices", services }));
client.on("unadvertiseServices", (ids) => out({ event: "unadvertiseServices", ids }));
client.on("parameterValues", (p) => out({ event: "parameterValues", parameters: p.parameters, id: p.id }));
client.on("serviceCallResponse", (r) =>
  out({ event: "serviceCallResponse", serviceId: r.serviceId, callId: r.callId, encoding: r.encoding, hex: hex(r.data) }),
);
client.on("serviceCallFailure", (f) =>
  out({ event: "serviceCallFailure", serviceId: f.serviceId, callId: f.callId, message: f.message }),
);

const bytes = (h) => new Uint8Array(Buffer.from(h, "hex"));
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const c = JSON.parse(line);
  switch (c.cmd) {
    case "call":
      client.sendServiceCallRequest({ serviceId: c.serviceId, callId: c.callId, encoding: c.encoding, data: new DataView(bytes(c.hex).buffer) });
      break;
    case "advertise":
      out({ event: "advertised", channelId: client.advertise({ topic: c.topic, encoding: c.encoding, schemaName: c.schemaName }) });
      break;
    case "unadvertise":
      client.unadvertise(c.channelId);
      break;
    case "publish":
      client.sendMessage(c.channelId, bytes(c.hex));
      break;
    case "get":
      client.getParameters(c.names, c.id);
      break;
    case "set":
      client.setParameters(c.parameters, c.id);
      break;
    case "raw":
      ws.send(c.text);
      break;
    case "rawbin":
      ws.send(bytes(c.hex));
      break;
    case "close":
      client.close();
      process.exit(0);
  }
}).on("close", () => process.exit(0));
