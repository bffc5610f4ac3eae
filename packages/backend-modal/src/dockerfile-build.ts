import { CapabilityError, type ImageBuild } from '@berth/core';
import { baseImages, buildFailure, logTail, readDockerfile } from '@berth/core/backend-kit';
import { BACKEND } from './credentials.js';
import { planImage, type BuildRecipe, type ImagePlan } from './image.js';
import type { ModalBackendOptions } from './options.js';

/** The builder names each step 'Step 2/5 : RUN make', as Docker's legacy builder does. */
const STEP = /^Step \d+\/\d+ : (.*)$/;

/** A Dockerfile for Modal's builder: the base image's pull plan, and the commands after FROM. */
export interface DockerfilePlan {
  base: ImagePlan;
  recipe: BuildRecipe;
}

/** The Dockerfile's instructions, continuation lines joined, comments and blank lines dropped. */
export function instructions(dockerfile: string): string[] {
  return dockerfile
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l.length > 0 && !l.startsWith('#'));
}

/**
 * Modal's builder runs a Dockerfile's commands, but COPY and ADD need the build context uploaded
 * (Modal's own clients do that with mounts, which berth does not speak yet): those are refused
 * with a CapabilityError that says what to do instead, as are multi-stage builds. The base image
 * is pulled like any image (mirrors, Docker config credentials).
 */
export async function planDockerfile(build: ImageBuild, options: ModalBackendOptions, environmentId?: string): Promise<DockerfilePlan> {
  const ctx = { operation: 'build' as const, backend: BACKEND, ...(environmentId ? { environmentId } : {}) };
  const dockerfile = await readDockerfile(build, { backend: BACKEND });
  const lines = instructions(dockerfile);
  const refuse = (what: string) =>
    new CapabilityError({
      ...ctx,
      capability: 'imageBuild.context',
      message: `the Modal backend builds from the Dockerfile's commands but cannot ${what} (${build.context}/${build.dockerfile}): bake those files into a base image and pass its reference, or fetch them in a RUN step`,
    });
  const froms = lines.filter((l) => /^FROM\s/i.test(l));
  if (froms.length !== 1 || /\sAS\s/i.test(froms[0] ?? '') || build.target) throw refuse('run a multi-stage build');
  const copying = lines.find((l) => /^(COPY|ADD)\s/i.test(l));
  if (copying) throw refuse(`upload the build context for "${copying.slice(0, 80)}"`);
  const baseRef = baseImages(dockerfile, build.args)[0];
  if (!baseRef) throw refuse('find its FROM image');
  const base = await planImage(baseRef, undefined, options, environmentId);
  // ARGs before FROM only name the base image, which is resolved here.
  const afterFrom = lines.slice(lines.indexOf(froms[0]!) + 1);
  return {
    base,
    recipe: {
      commands: [`FROM ${base.ref.canonical}`, ...afterFrom],
      ...(Object.keys(build.args).length ? { buildArgs: { ...build.args } } : {}),
      failure: (result, log) => {
        const step = [...log].reverse().find((l) => STEP.test(l));
        const pulling = step && /^FROM\s/i.test(STEP.exec(step)?.[1] ?? '');
        return buildFailure(result.exception?.trim() || String(result.status), {
          ...ctx,
          build,
          ...(step ? { step } : {}),
          logTail: logTail([...log]),
          ...(pulling ? { baseImage: baseRef } : {}),
          credentialsHint: "a base image in a private registry needs credentials in Docker's config",
        });
      },
    },
  };
}
