// Reads one JSON value per line on stdin and writes one line per input:
// "ok", or "invalid <reason>" when @ag-ui/core 1.0's EventSchema (the
// schema the opentask extension validates every frame with) refuses it.
"use strict";
const { EventSchema } = require("@ag-ui/core/schemas");
const readline = require("node:readline");

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on("line", (line) => {
  let value;
  try {
    value = JSON.parse(line);
  } catch (err) {
    process.stdout.write("invalid not JSON\n");
    return;
  }
  const r = EventSchema.safeParse(value);
  if (r.success) {
    process.stdout.write("ok\n");
    return;
  }
  const why = r.error.issues.map((i) => `${i.path.join(".") || "/"}: ${i.message}`).join("; ");
  process.stdout.write("invalid " + why.replace(/\n/g, " ") + "\n");
});
