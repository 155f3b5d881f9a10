export * from "./generated/@faker-js/faker.gen.ts";
export * from "./generated/msw.gen.ts";
