//! `#[derive(SystemParam)]`.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::visit_mut::VisitMut;
use syn::{Data, DeriveInput, Fields, GenericParam, Lifetime, Member, Type};

use crate::nest_tuple;

/// Replaces the struct's lifetimes `'w` and `'s` with `'static`, giving
/// each field's parameter type as it is named in the state type.
struct Staticize;

impl VisitMut for Staticize {
    fn visit_lifetime_mut(&mut self, lifetime: &mut Lifetime) {
        if lifetime.ident == "w" || lifetime.ident == "s" {
            *lifetime = Lifetime::new("'static", lifetime.span());
        }
    }
}

pub(crate) fn derive(input: &DeriveInput) -> syn::Result<TokenStream> {
    let name = &input.ident;
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new_spanned(
            &input.ident,
            "#[derive(SystemParam)] takes a struct whose fields are system parameters",
        ));
    };

    // The item type at fresh lifetimes: `'w` -> `'__w`, `'s` -> `'__s`.
    let mut item_args = Vec::new();
    for param in &input.generics.params {
        match param {
            GenericParam::Lifetime(def) => {
                let fresh = match def.lifetime.ident.to_string().as_str() {
                    "w" => Lifetime::new("'__w", Span::call_site()),
                    "s" => Lifetime::new("'__s", Span::call_site()),
                    _ => {
                        return Err(syn::Error::new_spanned(
                            &def.lifetime,
                            "#[derive(SystemParam)] structs take the lifetimes 'w (world) and 's (state) only",
                        ));
                    }
                };
                item_args.push(quote!(#fresh));
            }
            GenericParam::Type(t) => {
                let ident = &t.ident;
                item_args.push(quote!(#ident));
            }
            GenericParam::Const(c) => {
                let ident = &c.ident;
                item_args.push(quote!(#ident));
            }
        }
    }

    let mut members = Vec::new();
    let mut bindings = Vec::new();
    let mut static_types = Vec::new();
    let fields: Vec<_> = match &data.fields {
        Fields::Named(named) => named.named.iter().collect(),
        Fields::Unnamed(unnamed) => unnamed.unnamed.iter().collect(),
        Fields::Unit => Vec::new(),
    };
    for (index, field) in fields.iter().enumerate() {
        members.push(match &field.ident {
            Some(ident) => Member::Named(ident.clone()),
            None => Member::Unnamed(index.into()),
        });
        bindings.push(format_ident!("__field{}", index));
        let mut ty: Type = field.ty.clone();
        Staticize.visit_type_mut(&mut ty);
        static_types.push(quote!(#ty));
    }
    let fields_ty = nest_tuple(static_types);
    let pattern = nest_tuple(bindings.iter().map(|b| quote!(#b)).collect());

    // No bound `(fields..): SystemParam` is added for generic structs: a
    // where-bound would shadow the tuple's implementation, and with it the
    // item types `get_param` needs; the struct's own bounds must make the
    // fields parameters (as `T: Send + Sync + 'static` does for
    // `Query<'w, 's, &'static T>`).
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();

    // Every method of `SystemParam` is forwarded below, the provided ones
    // included: a method added to the trait must be forwarded here too, or
    // a derived param would take its default instead of its fields'.
    let param = quote!(::ecs_core::system::SystemParam);
    let fields_param = quote!(<#fields_ty as #param>);
    // SAFETY (of the generated impl): every method forwards to the tuple of
    // the fields' parameters, whose own implementation upholds the
    // contract: `init_state` records in `meta` exactly the tuple's accesses
    // (which include every field's and refuse fields that conflict), the
    // state is the tuple's state, and `get_param` hands the caller's
    // guarantee (it holds those accesses for `'__w`) on to the tuple and
    // only moves the fetched items into the struct. The struct's field
    // types are checked against the tuple's items by the compiler, so a
    // field cannot claim a longer lifetime than the tuple hands out.
    Ok(quote! {
        unsafe impl #impl_generics #param for #name #ty_generics #where_clause {
            type State = #fields_param::State;
            type Item<'__w, '__s> = #name<#(#item_args),*>;

            fn init_state(
                __world: &mut ::ecs_core::World,
                __meta: &mut ::ecs_core::system::SystemMeta,
            ) -> Self::State {
                #fields_param::init_state(__world, __meta)
            }

            fn validate(
                __state: &Self::State,
                __world: &::ecs_core::World,
            ) -> ::core::result::Result<(), ::std::string::String> {
                #fields_param::validate(__state, __world)
            }

            unsafe fn get_param<'__w, '__s>(
                __state: &'__s mut Self::State,
                __world: &'__w ::ecs_core::World,
                __window: ::ecs_core::storage::tick::TickWindow,
            ) -> Self::Item<'__w, '__s> {
                let #pattern = unsafe { #fields_param::get_param(__state, __world, __window) };
                #name { #(#members: #bindings),* }
            }

            fn apply(
                __state: &mut Self::State,
                __world: &mut ::ecs_core::World,
                __errors: &mut ::std::vec::Vec<::ecs_core::StoreError>,
            ) {
                #fields_param::apply(__state, __world, __errors)
            }

            fn report(
                __state: &Self::State,
                __stats: &mut ::std::vec::Vec<::ecs_core::query::ChunkStats>,
            ) {
                #fields_param::report(__state, __stats)
            }
        }
    })
}
