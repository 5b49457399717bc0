// A small app written for Kafka with kafkajs, run by TestAuditKafkaJS
// against vastfake in audit mode: it produces ten orders and reads them back
// in a consumer group, at kafkajs's defaults ("defaults") or with the
// settings docs/client-settings.md gives ("vast",
// which for kafkajs are its defaults). KAFKA_BOOTSTRAP names the broker; the
// topic "orders" exists. Prints "ok N" when every order came back. With the
// argument "gzip" it produces gzip batches, which VAST refuses. With
// KAFKA_SASL_MECHANISM set (plain, scram-sha-256, scram-sha-512) it logs in
// as KAFKA_USERNAME with KAFKA_PASSWORD.
"use strict";
const { Kafka, CompressionTypes, logLevel } = require("kafkajs");

async function main() {
  const sasl = process.env.KAFKA_SASL_MECHANISM
    ? { mechanism: process.env.KAFKA_SASL_MECHANISM, username: process.env.KAFKA_USERNAME, password: process.env.KAFKA_PASSWORD }
    : undefined;
  const kafka = new Kafka({ clientId: "orders-js", brokers: [process.env.KAFKA_BOOTSTRAP], logLevel: logLevel.NOTHING, sasl });
  const producer = kafka.producer();
  await producer.connect();
  const messages = [];
  for (let i = 0; i < 10; i++) messages.push({ key: "order-" + i, value: JSON.stringify({ order: i }) });
  const compression = process.argv[2] === "gzip" ? CompressionTypes.GZIP : CompressionTypes.None;
  await producer.send({ topic: "orders", messages, compression });
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId: "billing-js" });
  await consumer.connect();
  await consumer.subscribe({ topic: "orders", fromBeginning: true });
  let seen = 0;
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("only " + seen + " orders within 60 s")), 60000);
    consumer.run({
      eachMessage: async () => {
        seen++;
        if (seen === 10) {
          clearTimeout(timer);
          resolve();
        }
      },
    }).catch(reject);
  });
  await consumer.disconnect();
  console.log("ok " + seen);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
